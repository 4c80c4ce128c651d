#include "portico/pid_file.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace portico::proxy {

core::expected<void, std::string> write_pid_file(const std::string& path) {
  // Written aside and renamed: a reader never sees a half-written pid.
  std::string tmp = path + ".new";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f)
    return core::unexpected("pid file " + tmp + ": " + std::strerror(errno));
  std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
  if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return core::unexpected("pid file " + path + ": " + why);
  }
  return {};
}

void remove_pid_file_if_ours(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f)
    return;
  long pid = 0;
  bool read = std::fscanf(f, "%ld", &pid) == 1;
  std::fclose(f);
  if (read && pid == static_cast<long>(::getpid()))
    ::unlink(path.c_str());
}

core::expected<int, std::string> signal_pid_file(const std::string& path, int sig) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f)
    return core::unexpected("pid file " + path + ": " + std::strerror(errno) +
                            " (is portico running?)");
  long pid = 0;
  bool read = std::fscanf(f, "%ld", &pid) == 1;
  std::fclose(f);
  if (!read || pid <= 1)
    return core::unexpected("pid file " + path + " holds no pid");
  if (::kill(static_cast<pid_t>(pid), sig) != 0)
    return core::unexpected("signalling pid " + std::to_string(pid) + " from " + path + ": " +
                            std::strerror(errno));
  return static_cast<int>(pid);
}

} // namespace portico::proxy
