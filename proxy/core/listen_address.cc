#include "core/listen_address.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace portico::core {

namespace {

bool parse_int(std::string_view s, int base, int& out) {
  if (s.empty())
    return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string errno_text(std::string_view what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// Another server accepts on this path: the file is not stale.
bool unix_socket_alive(const sockaddr_un& sa) {
  // Non-blocking: a live server with a full backlog answers EAGAIN instead of stalling start-up.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return false;
  bool alive =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0 || errno == EAGAIN;
  ::close(fd);
  return alive;
}

core::expected<int, std::string> open_unix(const ListenAddress& a, int backlog) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (a.path.size() >= sizeof sa.sun_path) {
    return core::unexpected("unix socket path too long: " + a.path);
  }
  std::memcpy(sa.sun_path, a.path.c_str(), a.path.size() + 1);
  struct stat st;
  if (::stat(a.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    if (unix_socket_alive(sa)) {
      return core::unexpected(a.path + ": another server is listening there");
    }
    ::unlink(a.path.c_str());
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return core::unexpected(errno_text("socket"));
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    std::string why = errno_text("bind " + a.path);
    ::close(fd);
    return core::unexpected(why);
  }
  const char* step = nullptr;
  // Owner and mode are set before listen(2): until then a connect is refused, so nobody the
  // final mode would keep out can connect in between.
  if ((a.uid >= 0 || a.gid >= 0) &&
      ::chown(a.path.c_str(), static_cast<uid_t>(a.uid), static_cast<gid_t>(a.gid)) != 0)
    step = "chown ";
  else if (a.mode >= 0 && ::chmod(a.path.c_str(), static_cast<mode_t>(a.mode)) != 0)
    step = "chmod ";
  else if (::listen(fd, backlog) != 0)
    step = "listen ";
  if (step) {
    std::string why = errno_text(step + a.path);
    ::close(fd);
    ::unlink(a.path.c_str()); // ours, and useless half-made
    return core::unexpected(why);
  }
  return fd;
}

// Whether anyone listens on the address: a bind without SO_REUSEPORT fails if so, whether the
// listener has it or not, and SO_REUSEADDR passes over connections in TIME_WAIT. Between this
// bind and the group's first, a process could still take the address; that window is one
// system call wide.
core::expected<void, std::string> check_unused(const ListenAddress& a, const addrinfo* ai) {
  int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return core::unexpected(errno_text("socket"));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ai->ai_family == AF_INET6)
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  bool free = ::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
  std::string why = free ? std::string() : errno_text("bind " + a.text);
  ::close(fd);
  if (!free)
    return core::unexpected(std::move(why));
  return {};
}

core::expected<int, std::string> open_tcp(const ListenAddress& a, int backlog,
                                          PortSharing sharing) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(a.port);
  int rc = ::getaddrinfo(a.host.empty() ? nullptr : a.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    return core::unexpected(a.text + ": " + gai_strerror(rc));
  }
  if (sharing == PortSharing::NEW_GROUP && a.port != 0)
    if (auto unused = check_unused(a, res); !unused) {
      ::freeaddrinfo(res);
      return core::unexpected(unused.error());
    }
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    return core::unexpected(errno_text("socket"));
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (sharing != PortSharing::NONE)
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (res->ai_family == AF_INET6)
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, backlog) != 0) {
    std::string why = errno_text("bind " + a.text);
    ::close(fd);
    ::freeaddrinfo(res);
    return core::unexpected(why);
  }
  ::freeaddrinfo(res);
  return fd;
}

} // namespace

core::expected<ListenAddress, std::string> parse_listen_address(std::string_view s) {
  ListenAddress a;
  a.text = std::string(s);
  if (s.starts_with("unix:")) {
    a.kind = ListenAddress::Kind::UNIX;
    std::string_view rest = s.substr(5);
    auto colon = rest.rfind(':');
    int mode;
    if (colon != std::string_view::npos && parse_int(rest.substr(colon + 1), 8, mode)) {
      if (mode > 07777) {
        return core::unexpected("unix socket mode must be octal 0 to 7777: " + a.text);
      }
      a.mode = mode;
      rest = rest.substr(0, colon);
    }
    if (rest.empty() || rest[0] != '/') {
      return core::unexpected("unix socket path must be absolute: " + a.text);
    }
    if (rest.size() >= sizeof(sockaddr_un::sun_path)) {
      return core::unexpected(
          "unix socket path is " + std::to_string(rest.size()) + " bytes; at most " +
          std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " fit: " + a.text);
    }
    a.path = std::string(rest);
    return a;
  }
  auto colon = s.rfind(':');
  if (colon == std::string_view::npos || !parse_int(s.substr(colon + 1), 10, a.port) ||
      a.port <= 0 || a.port > 65535) {
    return core::unexpected("expected unix:/path[:mode] or HOST:PORT, got '" + a.text + "'");
  }
  std::string_view host = s.substr(0, colon);
  bool open_bracket = !host.empty() && host.front() == '[';
  bool close_bracket = !host.empty() && host.back() == ']';
  if (open_bracket != close_bracket || (!open_bracket && host.find(':') != host.npos)) {
    return core::unexpected("an IPv6 address needs brackets: [::1]:PORT, got '" + a.text + "'");
  }
  if (open_bracket)
    host = host.substr(1, host.size() - 2);
  if (open_bracket && host.empty()) {
    return core::unexpected("empty address in brackets: '" + a.text +
                            "' (for every address, write *:PORT)");
  }
  if (host == "*")
    host = {};
  a.host = std::string(host);
  return a;
}

bool same_socket(const ListenAddress& a, const ListenAddress& b) {
  if (a.kind != b.kind)
    return false;
  if (a.kind == ListenAddress::Kind::UNIX)
    return a.path == b.path;
  if (a.port != b.port)
    return false;
  auto v6 = [](const std::string& h) { return h.find(':') != std::string::npos; };
  auto wildcard = [](const std::string& h) { return h.empty() || h == "0.0.0.0" || h == "::"; };
  if (a.host == b.host || a.host.empty() || b.host.empty())
    return true;
  return v6(a.host) == v6(b.host) && (wildcard(a.host) || wildcard(b.host));
}

core::expected<int, std::string> open_listener(const ListenAddress& a, int backlog,
                                               PortSharing sharing) {
  return a.kind == ListenAddress::Kind::UNIX ? open_unix(a, backlog)
                                             : open_tcp(a, backlog, sharing);
}

} // namespace portico::core
