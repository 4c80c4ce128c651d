#include "listen_sockets.h"

#include "core/listen_address.h"

#include <charconv>
#include <fcntl.h>
#include <string_view>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::backend {

namespace {
// The caller never sees the sockets bound before a failure, so nobody else would close them.
void close_bound(const std::vector<ListenSocket>& sockets) {
  for (const auto& s : sockets) {
    ::close(s.fd);
    if (!s.unix_path.empty())
      ::unlink(s.unix_path.c_str());
  }
}
} // namespace

core::expected<std::vector<ListenSocket>, std::string>
open_listen_sockets(const std::vector<std::string>& addresses) {
  std::vector<ListenSocket> out;
  for (const auto& text : addresses) {
    auto a = core::parse_listen_address(text);
    if (!a) {
      close_bound(out);
      return core::unexpected(a.error());
    }
    // One shared socket per address for all workers (EPOLLEXCLUSIVE spreads the accepts).
    auto fd = core::open_listener(*a, 4096, core::PortSharing::NONE);
    if (!fd) {
      close_bound(out);
      return core::unexpected(fd.error());
    }
    ListenSocket s;
    s.fd = *fd;
    s.name = text;
    if (a->kind == core::ListenAddress::Kind::UNIX)
      s.unix_path = a->path;
    out.push_back(std::move(s));
  }
  return out;
}

core::expected<std::vector<ListenSocket>, std::string>
inherit_server_starter_sockets(const char* env) {
  std::vector<ListenSocket> out;
  std::string_view rest = env;
  while (!rest.empty()) {
    auto semi = rest.find(';');
    std::string_view item = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
    if (item.empty())
      continue;
    auto eq = item.rfind('=');
    int fd = -1;
    if (eq == std::string_view::npos ||
        std::from_chars(item.data() + eq + 1, item.data() + item.size(), fd).ec != std::errc() ||
        fd < 0) {
      return core::unexpected("malformed SERVER_STARTER_PORT entry: " + std::string(item));
    }
    int type = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
      return core::unexpected("SERVER_STARTER_PORT fd " + std::to_string(fd) +
                              " is not a stream socket");
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    ListenSocket s;
    s.fd = fd;
    s.name = std::string(item.substr(0, eq));
    out.push_back(std::move(s));
  }
  if (out.empty())
    return core::unexpected("SERVER_STARTER_PORT names no socket");
  return out;
}

} // namespace portico::backend
