#pragma once
// An HTTP/2 stream's response bytes waiting for a DATA frame. The first few hundred bytes live
// in the stream itself: a small response (hello, a status page, a gRPC reply) takes no 16 KiB
// block, so thousands of streams answered in one loop pass do not drain the block pool into
// malloc, nor spread one connection's responses over as many blocks (and cache lines).
// Bytes beyond that go to pooled blocks, in order after the inline ones.
#include "core/byte_queue.h"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace portico::server {

class StreamBody {
public:
  static constexpr size_t kInline = 512;

  size_t size() const { return inline_len_ + blocks_.size(); }
  bool empty() const { return size() == 0; }

  void append(std::string_view data) {
    if (blocks_.empty() && inline_len_ + data.size() <= kInline) {
      std::memcpy(inline_ + inline_len_, data.data(), data.size());
      inline_len_ += static_cast<uint32_t>(data.size());
      return;
    }
    spill();
    blocks_.append(data);
  }

  // Moves the first n bytes (n <= size()) onto out's tail: inline bytes are copied (they are
  // few), block bytes relinked where ByteQueue::move_from can.
  void move_to(core::ByteQueue& out, size_t n) {
    if (inline_len_ > 0) {
      size_t k = n < inline_len_ ? n : inline_len_;
      out.append(inline_, k);
      inline_len_ -= static_cast<uint32_t>(k);
      if (inline_len_ > 0)
        std::memmove(inline_, inline_ + k, inline_len_);
      n -= k;
    }
    if (n > 0)
      out.move_from(blocks_, n);
  }

  void clear() {
    inline_len_ = 0;
    blocks_.clear();
  }

private:
  // The inline bytes go first into the blocks, so that order holds once blocks are in use.
  void spill() {
    if (inline_len_ > 0) {
      blocks_.append(inline_, inline_len_);
      inline_len_ = 0;
    }
  }

  core::ByteQueue blocks_;
  uint32_t inline_len_ = 0;
  char inline_[kInline];
};

} // namespace portico::server
