#include "core/endpoint_address.h"

#include <arpa/inet.h>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/un.h>
#include <unistd.h>

namespace portico::core {

expected<EndpointSpec, std::string> parse_endpoint(std::string_view text) {
  EndpointSpec e;
  e.text = std::string(text);
  if (text.find("://") != std::string_view::npos)
    return unexpected(std::string("is a URL; an endpoint is unix:/path or HOST:PORT"));
  if (text.starts_with("unix:")) {
    e.is_unix = true;
    e.path = std::string(text.substr(5));
    if (e.path.empty() || e.path[0] != '/')
      return unexpected(std::string("needs an absolute path after unix:"));
    if (e.path.size() >= sizeof(sockaddr_un::sun_path))
      return unexpected("has a unix socket path longer than " +
                        std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes");
    return e;
  }
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == text.size())
    return unexpected(std::string("is not unix:/path or HOST:PORT"));
  std::string_view port = text.substr(colon + 1);
  auto r = std::from_chars(port.data(), port.data() + port.size(), e.port);
  if (r.ec != std::errc() || r.ptr != port.data() + port.size() || e.port <= 0 || e.port > 65535)
    return unexpected(std::string("has a port that is not 1 to 65535"));
  std::string_view host = text.substr(0, colon);
  bool bracketed = host.starts_with('[');
  if (bracketed != host.ends_with(']') || (!bracketed && host.find(':') != std::string_view::npos))
    return unexpected(std::string("needs brackets around an IPv6 address: [::1]:PORT"));
  if (bracketed)
    host = host.substr(1, host.size() - 2);
  if (host.empty())
    return unexpected(std::string("has no host"));
  for (char ch : host)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != ':' &&
        ch != '_')
      return unexpected(std::string("has a host that is not an address or a DNS name"));
  e.host = std::string(host);
  in6_addr a6;
  in_addr a4;
  e.numeric =
      inet_pton(AF_INET, e.host.c_str(), &a4) == 1 || inet_pton(AF_INET6, e.host.c_str(), &a6) == 1;
  return e;
}

std::optional<SocketAddress> literal_address(const EndpointSpec& e) {
  SocketAddress a;
  if (e.is_unix) {
    auto* sa = reinterpret_cast<sockaddr_un*>(&a.storage);
    sa->sun_family = AF_UNIX;
    std::memcpy(sa->sun_path, e.path.c_str(), e.path.size() + 1);
    a.len = sizeof(sockaddr_un);
    return a;
  }
  auto* s4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  if (inet_pton(AF_INET, e.host.c_str(), &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(static_cast<uint16_t>(e.port));
    a.len = sizeof(sockaddr_in);
    return a;
  }
  auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (inet_pton(AF_INET6, e.host.c_str(), &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(static_cast<uint16_t>(e.port));
    a.len = sizeof(sockaddr_in6);
    return a;
  }
  return std::nullopt;
}

int connect_nonblocking(const SocketAddress& a, bool* done) {
  int fd = ::socket(a.get()->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (a.get()->sa_family != AF_UNIX) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  int rc = ::connect(fd, a.get(), a.len);
  if (done)
    *done = rc == 0;
  if (rc != 0 && errno != EINPROGRESS) {
    // A unix socket whose backlog is full answers EAGAIN: treat it as refused, like TCP's RST.
    int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

bool connect_succeeded(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
    return false;
  return err == 0;
}

} // namespace portico::core
