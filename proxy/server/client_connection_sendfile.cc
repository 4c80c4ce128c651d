// A client connection's file body (ClientConnection::send_file): what was queued before it,
// then the file by sendfile(2), then what was queued after it, so that a pipelined response
// never overtakes it.
#include "core/error_log.h"
#include "server/client_connection.h"
#include "server/server_context.h"

#include <algorithm>
#include <cerrno>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::server {

bool ClientConnection::send_file(int fd, int64_t offset, int64_t length) {
  if (tls_ || file_fd_ >= 0 || close_state_ != CloseState::OPEN)
    return false;
  before_file_.move_from(output_, output_.size());
  file_fd_ = fd;
  file_offset_ = offset;
  file_left_ = length;
  want_flush();
  return true;
}

void ClientConnection::release_file() {
  if (file_fd_ >= 0)
    ::close(file_fd_);
  file_fd_ = -1;
  file_left_ = 0;
  before_file_.clear();
}

bool ClientConnection::write_plain() {
  auto write_queue = [&](core::ByteQueue& q, int flags = 0) {
    if (q.empty())
      return true;
    ssize_t w = q.write_to(fd_, flags);
    return w >= 0 || errno == EAGAIN || errno == EWOULDBLOCK;
  };
  if (file_fd_ >= 0) {
    // MSG_MORE: the head leaves in the file's first segment, not a packet of its own that
    // wakes the client for 200 bytes (nginx's tcp_nopush).
    if (!write_queue(before_file_, MSG_MORE))
      return false;
    if (!before_file_.empty())
      return true; // the socket is full
    while (file_left_ > 0) {
      off_t off = static_cast<off_t>(file_offset_);
      ssize_t n = ::sendfile(fd_, file_fd_, &off,
                             static_cast<size_t>(std::min<int64_t>(file_left_, int64_t{1} << 30)));
      if (n > 0) {
        file_offset_ += n;
        file_left_ -= n;
        ctx_.stats().sendfile_bytes.inc(static_cast<uint64_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return true;
      // 0: the file shrank under us, and the length promised cannot be kept; only cutting
      // the connection tells the client.
      if (n == 0)
        core::log::write(core::log::Level::WARN, core::log::Kind::STATIC_FILE,
                         "a file shrank while it was sent: the connection was cut");
      return false;
    }
    release_file();
  }
  return write_queue(output_);
}

} // namespace portico::server
