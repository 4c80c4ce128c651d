#pragma once
// An HTTP/2 stream's response bytes waiting for a DATA frame. The first bytes live in what the
// request's fields left of the stream's inline arena: a small response (hello, a status page, a
// gRPC reply) takes no 16 KiB block, so thousands of streams answered in one loop pass do not
// drain the block pool into malloc, nor spread one connection's responses over as many blocks
// (and cache lines); and the stream holds no buffer of its own for them. Bytes beyond that go
// to pooled blocks, in order after the inline ones.
#include "core/byte_queue.h"
#include "http/arena.h"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace portico::server {

class StreamBody {
public:
  explicit StreamBody(http::Arena& arena) : arena_(arena) {}

  size_t size() const { return (end_ - begin_) + blocks_.size(); }
  bool empty() const { return size() == 0; }

  void append(std::string_view data) {
    if (blocks_.empty()) {
      if (char* p = arena_.grow_inline(held(), data.size())) {
        if (end_ == 0)
          base_ = p;
        std::memcpy(p, data.data(), data.size());
        end_ += static_cast<uint32_t>(data.size());
        return;
      }
    }
    spill();
    blocks_.append(data);
  }

  // Moves the first n bytes (n <= size()) onto out's tail: inline bytes are copied (they are
  // few), block bytes relinked where ByteQueue::move_from can.
  void move_to(core::ByteQueue& out, size_t n) {
    if (end_ > begin_) {
      size_t k = n < end_ - begin_ ? n : end_ - begin_;
      out.append(base_ + begin_, k);
      begin_ += static_cast<uint32_t>(k);
      if (begin_ == end_)
        forget_inline(); // a stream answered in pieces reuses the same arena bytes
      n -= k;
    }
    if (n > 0)
      out.move_from(blocks_, n);
  }

  // Before the arena is reset.
  void clear() {
    forget_inline();
    blocks_.clear();
  }

private:
  std::string_view held() const { return {base_, end_}; }
  void forget_inline() {
    arena_.shrink_inline(held());
    base_ = nullptr;
    begin_ = end_ = 0;
  }
  // The inline bytes go first into the blocks, so that order holds once blocks are in use.
  void spill() {
    if (end_ > begin_)
      blocks_.append(base_ + begin_, end_ - begin_);
    forget_inline();
  }

  http::Arena& arena_;
  core::ByteQueue blocks_;
  char* base_ = nullptr; // the inline bytes, in the arena: [base_ + begin_, base_ + end_)
  uint32_t begin_ = 0;
  uint32_t end_ = 0;
};

} // namespace portico::server
