#include "server/plain_http_reply.h"

#include <string_view>
#include <sys/socket.h>

namespace portico::server {

void send_plain_http_reply(int fd) {
  static constexpr std::string_view kAnswer =
      "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 46\r\n"
      "Connection: close\r\n\r\nThe plain HTTP request was sent to HTTPS port\n";
  char sink[4096];
  for (int i = 0; i < 16 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
  }
  [[maybe_unused]] ssize_t n = ::send(fd, kAnswer.data(), kAnswer.size(), MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
}

} // namespace portico::server
