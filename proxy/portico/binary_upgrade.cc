#include "portico/binary_upgrade.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace portico::proxy {

namespace {
constexpr const char* kReadyEnv = "PORTICO_UPGRADE_READY_FD";
constexpr const char* kListenEnv = "PORTICO_LISTEN_FDS";
constexpr ev_tstamp kReadyTimeout = 60;
constexpr char kReady[] = "ready\n";

std::string describe_status(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

void set_cloexec(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0)
    ::fcntl(fd, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC);
}
} // namespace

BinaryUpgrade::BinaryUpgrade(struct ev_loop* loop, Outcome on_outcome)
    : loop_(loop), on_outcome_(std::move(on_outcome)) {
  ev_init(&ready_, ready_cb);
  ready_.data = this;
  ev_init(&child_, child_cb);
  child_.data = this;
  ev_init(&timeout_, timeout_cb);
  timeout_.data = this;
}

BinaryUpgrade::~BinaryUpgrade() {
  ev_io_stop(loop_, &ready_);
  ev_child_stop(loop_, &child_);
  ev_timer_stop(loop_, &timeout_);
  if (ready_fd_ >= 0)
    ::close(ready_fd_);
}

core::expected<void, std::string> BinaryUpgrade::start(const std::vector<std::string>& argv,
                                                       const std::vector<int>& inherit,
                                                       const std::string& listen_env) {
  if (in_progress())
    return core::unexpected("an upgrade is already under way (pid " + std::to_string(pid_) + ")");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    return core::unexpected(std::string("pipe: ") + std::strerror(errno));
  std::vector<std::string> env_strings;
  // WATCHDOG_PID names this process: the new one would take the watchdog for someone
  // else's and never feed it once it is the service's main process.
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, kReadyEnv, std::strlen(kReadyEnv)) != 0 &&
        std::strncmp(*e, kListenEnv, std::strlen(kListenEnv)) != 0 &&
        std::strncmp(*e, "WATCHDOG_PID=", 13) != 0)
      env_strings.push_back(*e);
  env_strings.push_back(std::string(kReadyEnv) + "=" + std::to_string(pipe_fds[1]));
  env_strings.push_back(std::string(kListenEnv) + "=" + listen_env);
  std::vector<char*> env, args;
  for (auto& s : env_strings)
    env.push_back(s.data());
  env.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy)
    args.push_back(s.data());
  args.push_back(nullptr);

  // Only the main thread starts processes, so clearing close-on-exec for the spawn cannot
  // leak these descriptors into another one.
  for (int fd : inherit)
    set_cloexec(fd, false);
  set_cloexec(pipe_fds[1], false);
  // The new process starts as a fresh one would: no signal blocked (this thread blocks the
  // ones its loop reads through signalfd), none ignored.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int err = argv[0].find('/') == std::string::npos
                ? ::posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), env.data())
                : ::posix_spawn(&pid, args[0], nullptr, &attr, args.data(), env.data());
  posix_spawnattr_destroy(&attr);
  for (int fd : inherit)
    set_cloexec(fd, true);
  ::close(pipe_fds[1]);
  if (err != 0) {
    ::close(pipe_fds[0]);
    return core::unexpected("starting " + argv[0] + ": " + std::strerror(err));
  }
  pid_ = pid;
  ready_fd_ = pipe_fds[0];
  ev_io_set(&ready_, ready_fd_, EV_READ);
  ev_io_start(loop_, &ready_);
  ev_child_set(&child_, pid_, 0);
  ev_child_start(loop_, &child_);
  ev_timer_set(&timeout_, kReadyTimeout, 0);
  ev_timer_start(loop_, &timeout_);
  return {};
}

void BinaryUpgrade::finish(pid_t pid, const std::string& why) {
  ev_io_stop(loop_, &ready_);
  ev_timer_stop(loop_, &timeout_);
  if (ready_fd_ >= 0)
    ::close(ready_fd_);
  ready_fd_ = -1;
  if (pid > 0)
    ev_child_stop(loop_, &child_); // the new process outlives this one: not ours to reap
  pid_ = -1;
  on_outcome_(pid, why);
}

void BinaryUpgrade::ready_cb(struct ev_loop*, ev_io* w, int) {
  auto* self = static_cast<BinaryUpgrade*>(w->data);
  char buf[sizeof kReady];
  ssize_t n = ::read(self->ready_fd_, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (n == static_cast<ssize_t>(sizeof kReady - 1) && std::memcmp(buf, kReady, n) == 0) {
    self->finish(self->pid_, "");
    return;
  }
  // Closed without a word: the new process is gone or gave up; its exit status says why.
  ev_io_stop(self->loop_, &self->ready_);
}

void BinaryUpgrade::child_cb(struct ev_loop*, ev_child* w, int) {
  auto* self = static_cast<BinaryUpgrade*>(w->data);
  ev_child_stop(self->loop_, w);
  self->finish(-1, "the new process " + describe_status(w->rstatus) + " before it was ready");
}

void BinaryUpgrade::timeout_cb(struct ev_loop*, ev_timer* w, int) {
  auto* self = static_cast<BinaryUpgrade*>(w->data);
  // Ours, started a minute ago and not serving: ended, and reaped by child_cb.
  ::kill(self->pid_, SIGTERM);
  ev_io_stop(self->loop_, &self->ready_);
  ev_timer_stop(self->loop_, &self->timeout_);
}

bool started_by_upgrade() {
  return std::getenv(kReadyEnv) != nullptr;
}

void announce_upgrade_ready() {
  const char* value = std::getenv(kReadyEnv);
  if (!value)
    return;
  int fd = std::atoi(value);
  ::unsetenv(kReadyEnv);
  if (fd < 3)
    return;
  ssize_t n = ::write(fd, kReady, sizeof kReady - 1);
  (void)n; // the old process may be gone: nothing to tell then
  ::close(fd);
}

} // namespace portico::proxy
