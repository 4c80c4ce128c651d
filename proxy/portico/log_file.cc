#include "portico/log_file.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace portico::proxy {

int open_log_file(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

bool reopen_log_file(const std::string& path, int fd) {
  int fresh = open_log_file(path);
  if (fresh < 0)
    return false;
  bool ok = ::dup3(fresh, fd, O_CLOEXEC) >= 0;
  int saved = errno;
  ::close(fresh);
  errno = saved;
  return ok;
}

} // namespace portico::proxy
