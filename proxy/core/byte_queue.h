#pragma once
// A FIFO of bytes held in pooled blocks: the output side of a connection or stream. Appending
// copies once into the tail block; writing out gathers the blocks into one writev.
#include "core/block_pool.h"

#include <cstring>
#include <span>
#include <string_view>
#include <sys/types.h>
#include <sys/uio.h>

namespace portico::core {

class ByteQueue {
public:
  ByteQueue() = default;
  ByteQueue(const ByteQueue&) = delete;
  ByteQueue& operator=(const ByteQueue&) = delete;
  ~ByteQueue() { clear(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Inline for the common case (heads are appended a field piece at a time): room in the tail.
  void append(const void* data, size_t n) {
    if (tail_ && n <= tail_->writable()) {
      if (n == 0)
        return; // data may be null (an empty string_view): memcpy must not see it
      std::memcpy(tail_->data + tail_->end, data, n);
      tail_->end += static_cast<uint32_t>(n);
      size_ += n;
      return;
    }
    append_slow(data, n);
  }
  void append(std::string_view s) { append(s.data(), s.size()); }

  // Space at the tail to write into directly (e.g. read(2) or a formatter), then commit().
  std::span<char> write_space();
  void commit(size_t n);

  // The first contiguous readable run.
  std::string_view front() const;
  // Calls f(std::string_view) for each contiguous readable run, head first, without draining.
  template <typename F> void for_each_run(F&& f) const {
    for (Block* b = head_; b; b = b->next)
      if (b->readable() > 0)
        f(std::string_view(b->data + b->begin, b->readable()));
  }
  // Fills up to max iovecs from the head; returns how many were filled.
  int fill_iovec(iovec* iov, int max) const;
  void drain(size_t n);
  // Copies out up to n bytes from the head into dst without draining.
  size_t peek(char* dst, size_t n) const;
  void clear();

  // send(2) or sendmsg(2) as much as the socket takes, with send_flags (MSG_MORE for a head
  // that a file follows): fd is a socket. Returns bytes written, or -1 with errno set (EAGAIN
  // included).
  ssize_t write_to(int fd, int send_flags = 0);

  // Moves up to n bytes from the head of other onto this tail, relinking whole blocks where
  // possible instead of copying.
  void move_from(ByteQueue& other, size_t n);

private:
  void append_slow(const void* data, size_t n);
  Block* head_ = nullptr;
  Block* tail_ = nullptr;
  size_t size_ = 0;
};

} // namespace portico::core
