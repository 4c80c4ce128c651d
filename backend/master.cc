#include "master.h"

#include "worker.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <poll.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace portico::backend {

namespace {

constexpr int kSignals[] = {SIGHUP, SIGTERM, SIGQUIT, SIGINT, SIGTTIN, SIGTTOU, SIGCHLD};

double now_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

sigset_t master_sigset() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kSignals)
    sigaddset(&set, s);
  return set;
}

} // namespace

Master::Master(Options opts, std::vector<ListenSocket> sockets)
    : opts_(std::move(opts)), sockets_(std::move(sockets)) {
  target_ = opts_.workers > 0 ? opts_.workers : std::max(1, int(sysconf(_SC_NPROCESSORS_ONLN)));
  if (opts_.store == "shm")
    shm_ = std::make_unique<ShmCounterTable>();
}

Master::~Master() {
  if (sigfd_ >= 0)
    ::close(sigfd_);
}

void Master::log(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "portico-backend[%d]: %s\n", int(getpid()), buf);
}

bool Master::spawn() {
  pid_t pid = ::fork();
  if (pid < 0) {
    log("fork failed: %s", std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    // Child: signals back to their defaults, unblocked; die with the master. TERM and QUIT
    // stay blocked until the worker's loop watches them (the worker unblocks them then): one
    // sent meanwhile (a HUP right after this spawn) stops the worker gracefully instead of
    // killing it.
    ::close(sigfd_);
    for (int s : kSignals)
      ::signal(s, SIG_DFL);
    sigset_t set = master_sigset();
    sigdelset(&set, SIGTERM);
    sigdelset(&set, SIGQUIT);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
      _exit(0);
    int code = run_worker(opts_, sockets_, shm_.get());
    std::fflush(nullptr);
#ifdef __SANITIZE_ADDRESS__
    __lsan_do_leak_check(); // _exit skips LeakSanitizer's atexit check: a worker runs it here
#endif
    _exit(code);
  }
  workers_[pid] = {generation_, now_seconds()};
  log("worker %d started (generation %u)", int(pid), generation_);
  return true;
}

double Master::backoff_delay(double lived) {
  // A worker that ran a while is an accident; one that dies at once is a crash loop.
  if (lived > 5)
    consecutive_crashes_ = 0;
  double d = 0.1 * (1 << std::min(consecutive_crashes_, 7)); // 0.1 s doubling to 12.8 s
  ++consecutive_crashes_;
  return d;
}

void Master::reap() {
  double now = now_seconds();
  for (;;) {
    int status;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0)
      break;
    auto it = workers_.find(pid);
    if (it == workers_.end())
      continue;
    WorkerInfo info = it->second;
    workers_.erase(it);
    bool current = info.generation == generation_;
    if (WIFSIGNALED(status)) {
      double delay = backoff_delay(now - info.started_at);
      log("worker %d killed by signal %d (%s)%s", int(pid), WTERMSIG(status),
          strsignal(WTERMSIG(status)), current && !stopping_ ? ", respawning" : "");
      if (current && !stopping_)
        respawn_at_.push_back(now + delay);
    } else if (WEXITSTATUS(status) != kWorkerExitRetired) {
      double delay = backoff_delay(now - info.started_at);
      log("worker %d exited with status %d%s", int(pid), WEXITSTATUS(status),
          current && !stopping_ ? ", respawning" : "");
      if (current && !stopping_)
        respawn_at_.push_back(now + delay);
    } else if (current && !stopping_) {
      // Retired after --max-requests: replace it at once.
      respawn_at_.push_back(now);
    }
  }
}

void Master::signal_workers(int sig, bool old_generations_only) {
  for (const auto& [pid, info] : workers_)
    if (!old_generations_only || info.generation != generation_)
      ::kill(pid, sig);
}

void Master::handle_signal(int sig) {
  switch (sig) {
  case SIGCHLD: reap(); break;
  case SIGHUP:
    if (stopping_)
      break; // no new generation while stopping
    // New workers first, so that the sockets never go unserved; then the old ones finish.
    log("graceful restart");
    ++generation_;
    respawn_at_.clear();
    for (int i = 0; i < target_; ++i)
      spawn();
    signal_workers(SIGTERM, true);
    break;
  case SIGTERM:
  case SIGQUIT:
    if (!stopping_) {
      log("graceful stop");
      stopping_ = true;
      stop_deadline_ = now_seconds() + opts_.graceful_timeout + 1;
      respawn_at_.clear();
      signal_workers(SIGTERM, false);
    }
    break;
  case SIGINT:
    log("immediate stop");
    stopping_ = true;
    respawn_at_.clear();
    signal_workers(SIGKILL, false);
    stop_deadline_ = now_seconds();
    break;
  case SIGTTIN:
    if (stopping_)
      break;
    ++target_;
    log("workers: %d", target_);
    spawn();
    break;
  case SIGTTOU:
    if (stopping_)
      break;
    if (target_ > 1) {
      --target_;
      log("workers: %d", target_);
      // Retire the newest worker of this generation gracefully.
      for (auto it = workers_.rbegin(); it != workers_.rend(); ++it)
        if (it->second.generation == generation_) {
          it->second.generation = generation_ - 1; // not respawned when it exits
          ::kill(it->first, SIGTERM);
          break;
        }
    } else {
      log("workers: %d (the minimum)", target_);
    }
    break;
  }
}

void Master::schedule_respawns(double now) {
  int alive = 0;
  for (const auto& [pid, info] : workers_)
    alive += info.generation == generation_;
  std::sort(respawn_at_.begin(), respawn_at_.end());
  while (!respawn_at_.empty() && respawn_at_.front() <= now) {
    respawn_at_.erase(respawn_at_.begin());
    if (alive < target_ && spawn())
      ++alive;
  }
}

int Master::run() {
  sigset_t set = master_sigset();
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  sigfd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd_ < 0) {
    log("signalfd: %s", std::strerror(errno));
    return 1;
  }
  if (!opts_.pid_file.empty()) {
    if (FILE* f = std::fopen(opts_.pid_file.c_str(), "w")) {
      std::fprintf(f, "%d\n", int(getpid()));
      std::fclose(f);
    } else {
      log("cannot write pid file %s: %s", opts_.pid_file.c_str(), std::strerror(errno));
      return 1;
    }
  }
  for (const auto& s : sockets_)
    log("listening on %s", s.name.c_str());
  for (int i = 0; i < target_; ++i)
    spawn();
  log("started %d workers", target_);

  while (!(stopping_ && workers_.empty())) {
    double now = now_seconds();
    schedule_respawns(now);
    int timeout_ms = -1;
    if (!respawn_at_.empty())
      timeout_ms = std::max(
          0, int((*std::min_element(respawn_at_.begin(), respawn_at_.end()) - now) * 1000) + 1);
    if (stopping_) {
      if (now >= stop_deadline_) {
        signal_workers(SIGKILL, false); // graceful period over
        stop_deadline_ = now + 3600;
      }
      timeout_ms = std::max(0, int((stop_deadline_ - now) * 1000) + 1);
    }
    pollfd p{sigfd_, POLLIN, 0};
    int rc = ::poll(&p, 1, timeout_ms);
    if (rc < 0 && errno != EINTR)
      break;
    signalfd_siginfo si;
    while (::read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
      handle_signal(static_cast<int>(si.ssi_signo));
  }
  for (const auto& s : sockets_)
    if (!s.unix_path.empty())
      ::unlink(s.unix_path.c_str());
  if (!opts_.pid_file.empty())
    ::unlink(opts_.pid_file.c_str());
  log("stopped");
  return 0;
}

} // namespace portico::backend
