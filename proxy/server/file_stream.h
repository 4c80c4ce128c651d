#pragma once
// A file range read into the response as the client takes it: where sendfile cannot be used
// (TLS, HTTP/2, a filter that reads the body). Owns the descriptor.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string_view>
#include <unistd.h>

namespace portico::server {

class FileStream {
public:
  static constexpr size_t kChunk = 64 * 1024;
  enum class Progress : uint8_t { WAITING, DONE, FAILED };

  FileStream() = default;
  FileStream(const FileStream&) = delete;
  FileStream& operator=(const FileStream&) = delete;
  ~FileStream() { reset(); }

  void open(int fd, int64_t offset, int64_t length) {
    reset();
    fd_ = fd;
    offset_ = offset;
    left_ = length;
  }
  void reset() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
    left_ = 0;
  }
  bool active() const { return fd_ >= 0; }

  // Reads chunks and hands each to send(std::string_view) while blocked() is false. DONE once
  // the range is sent, FAILED when the file came up short (truncated under us) or could not be
  // read: the promised length cannot be kept. Either closes the file.
  template <typename Send, typename Blocked> Progress pump(Send&& send, Blocked&& blocked) {
    while (left_ > 0 && !blocked()) {
      size_t want = static_cast<size_t>(std::min<int64_t>(left_, kChunk));
      ssize_t n = ::pread(fd_, buffer_, want, offset_);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        reset();
        return Progress::FAILED;
      }
      offset_ += n;
      left_ -= n;
      send(std::string_view(buffer_, static_cast<size_t>(n)));
      if (fd_ < 0)
        return Progress::WAITING; // send() ended the exchange, which reset us
    }
    if (left_ > 0)
      return Progress::WAITING;
    reset();
    return Progress::DONE;
  }

private:
  // A chunk never outlives the send() that copies it: one buffer per thread is enough.
  static inline thread_local char buffer_[kChunk];
  int fd_ = -1;
  int64_t offset_ = 0;
  int64_t left_ = 0;
};

} // namespace portico::server
