#include "core/sd_notify.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace portico::core::sd {

bool notify(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path)
    return true;
  size_t len = std::strlen(path);
  sockaddr_un sa{};
  if (len >= sizeof sa.sun_path || (path[0] != '/' && path[0] != '@'))
    return false;
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path, len);
  if (path[0] == '@')
    sa.sun_path[0] = '\0'; // abstract
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return false;
  socklen_t salen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  ssize_t n = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                       reinterpret_cast<sockaddr*>(&sa), salen);
  ::close(fd);
  return n == static_cast<ssize_t>(state.size());
}

double watchdog_interval() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  if (!usec)
    return 0;
  if (const char* pid = std::getenv("WATCHDOG_PID"); pid && std::atoll(pid) != ::getpid())
    return 0; // meant for another process
  long long v = std::atoll(usec);
  return v > 0 ? static_cast<double>(v) / 1e6 : 0;
}

} // namespace portico::core::sd
