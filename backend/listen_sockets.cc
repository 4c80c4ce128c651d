#include "listen_sockets.h"

#include "core/listen_address.h"

#include <charconv>
#include <fcntl.h>
#include <string_view>
#include <sys/socket.h>

namespace portico::backend {

bool open_listen_sockets(const std::vector<std::string>& addresses, std::vector<ListenSocket>* out,
                         std::string* error) {
  for (const auto& text : addresses) {
    auto a = core::parse_listen_address(text);
    if (!a) {
      *error = a.error();
      return false;
    }
    // One shared socket per address for all workers (EPOLLEXCLUSIVE spreads the accepts).
    auto fd = core::open_listener(*a, 4096, false);
    if (!fd) {
      *error = fd.error();
      return false;
    }
    ListenSocket s;
    s.fd = *fd;
    s.name = text;
    if (a->kind == core::ListenAddress::Kind::UNIX)
      s.unix_path = a->path;
    out->push_back(std::move(s));
  }
  return true;
}

bool inherit_server_starter_sockets(const char* env, std::vector<ListenSocket>* out,
                                    std::string* error) {
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
      *error = "malformed SERVER_STARTER_PORT entry: " + std::string(item);
      return false;
    }
    int type = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
      *error = "SERVER_STARTER_PORT fd " + std::to_string(fd) + " is not a stream socket";
      return false;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    ListenSocket s;
    s.fd = fd;
    s.name = std::string(item.substr(0, eq));
    out->push_back(std::move(s));
  }
  return !out->empty() || (*error = "SERVER_STARTER_PORT names no socket", false);
}

} // namespace portico::backend
