#include "master.h"

#include "core/sd_notify.h"
#include "http/request_head.h"
#include "metrics/dashboard_page.h"

#include "worker.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
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
  loop_ = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
  // Both only end a turn of the loop; run() does the work after it.
  ev_init(&signal_io_, [](struct ev_loop*, ev_io*, int) {});
  ev_init(&wake_, [](struct ev_loop*, ev_timer*, int) {});
  target_ = opts_.workers > 0 ? opts_.workers : std::max(1, int(sysconf(_SC_NPROCESSORS_ONLN)));
  if (opts_.store == "shm")
    shm_ = std::make_unique<ShmCounterTable>();
  if (!opts_.admin.empty())
    metrics_ = std::make_unique<BackendMetrics>(BackendMetrics::capacity_for(target_));
  // Room for many more workers than asked for (TTIN, generations draining after HUPs); one
  // that finds no place accepts without asking.
  balance_ = std::make_unique<AcceptBalance>(std::max<size_t>(1024, 4 * size_t(target_)));
  if (!balance_->ok())
    balance_.reset();
}

Master::~Master() {
  admin_.reset();
  dashboard_.reset();
  ev_io_stop(loop_, &signal_io_);
  ev_timer_stop(loop_, &wake_);
  ev_loop_destroy(loop_);
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
  int slot = -1;
  if (metrics_) {
    slot = metrics_->acquire();
    if (slot < 0) {
      // Only when old generations still drain after many quick HUPs: wait for one to exit.
      log("no metrics slot free (%zu workers alive): worker start postponed", metrics_->in_use());
      return false;
    }
  }
  int place = balance_ ? balance_->reserve() : -1;
  // The child checks that its parent is still this master, by pid: as PID 1 of a container
  // the master is pid 1 itself, so "parent is 1" cannot mean "the master is gone".
  pid_t master_pid = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    log("fork failed: %s", std::strerror(errno));
    if (metrics_)
      metrics_->release(slot);
    if (balance_)
      balance_->release(place);
    return false;
  }
  if (pid == 0) {
    // Child: signals back to their defaults, unblocked; die with the master. TERM and QUIT
    // stay blocked until the worker's loop watches them (the worker unblocks them then): one
    // sent meanwhile (a HUP right after this spawn) stops the worker gracefully instead of
    // killing it.
    ::close(sigfd_);
    if (admin_)
      admin_->close_fds_after_fork();
    ev_loop_destroy(loop_); // the master's: the worker makes its own
    for (int s : kSignals)
      ::signal(s, SIG_DFL);
    sigset_t set = master_sigset();
    sigdelset(&set, SIGTERM);
    sigdelset(&set, SIGQUIT);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != master_pid)
      _exit(0); // the master died before PR_SET_PDEATHSIG took hold
    int code = run_worker(opts_, sockets_, shm_.get(), metrics_ ? &metrics_->slot(slot) : nullptr,
                          balance_ ? balance_->member(place) : nullptr);
    std::fflush(nullptr);
#ifdef __SANITIZE_ADDRESS__
    __lsan_do_leak_check(); // _exit skips LeakSanitizer's atexit check: a worker runs it here
#endif
    _exit(code);
  }
  workers_[pid] = {generation_, now_seconds(), slot, place};
  log("worker %d started (generation %u)", int(pid), generation_);
  return true;
}

void Master::spawn_or_retry(double now) {
  if (!spawn())
    respawn_at_.push_back(now + 0.1);
}

void Master::count_exit(const WorkerInfo& info, int status) {
  switch (info.stop) {
  case StopReason::HUP: ++stats_.restarts[size_t(RestartCause::HUP)]; return;
  case StopReason::SHRINK:
  case StopReason::STOP: return; // not replaced
  case StopReason::NONE: break;
  }
  bool retired = WIFEXITED(status) && WEXITSTATUS(status) == kWorkerExitRetired;
  ++stats_.restarts[size_t(retired ? RestartCause::MAX_REQUESTS : RestartCause::CRASH)];
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
    if (metrics_)
      metrics_->release(info.slot); // its counts stay in the slot for the next worker
    if (balance_)
      balance_->release(info.place);
    count_exit(info, status);
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

void Master::signal_workers(int sig, bool old_generations_only, StopReason why) {
  for (auto& [pid, info] : workers_)
    if (!old_generations_only || info.generation != generation_) {
      if (info.stop == StopReason::NONE)
        info.stop = why;
      ::kill(pid, sig);
    }
}

SupervisionStats Master::supervision_stats() const {
  SupervisionStats s = stats_;
  s.workers_configured = target_;
  for (const auto& [pid, info] : workers_) {
    bool busy = info.slot >= 0 && metrics_->slot(info.slot).in_flight() > 0;
    ++(busy ? s.workers_busy : s.workers_idle);
  }
  return s;
}

AdminResponse Master::admin_response(std::string_view path, std::string_view query) {
  if (path == "/metrics")
    return {200, "text/plain; version=0.0.4; charset=utf-8",
            expose(*metrics_, supervision_stats())};
  if (path == "/healthz")
    return {200, "text/plain", "ok\n"};
  if (path == "/" || path == "/dashboard")
    return {200, "text/html; charset=utf-8", std::string(metrics::dashboard_page())};
  if (path == "/stats.json") {
    std::string since(http::query_param(query, "since"));
    return {200, "application/json",
            dashboard_->stats_json(std::strtoull(since.c_str(), nullptr, 10), stopping_)};
  }
  return {404, "text/plain", "not found: try /, /stats.json, /metrics or /healthz\n"};
}

void Master::handle_signal(int sig) {
  switch (sig) {
  case SIGCHLD: reap(); break;
  case SIGHUP:
    if (stopping_)
      break; // no new generation while stopping
    // New workers first, so that the sockets never go unserved; then the old ones finish.
    log("graceful restart");
    {
      // sd_notify(3)'s reload protocol: RELOADING=1 with the monotonic clock, READY=1 when
      // the new generation is forked (its sockets were never unserved).
      timespec ts{};
      ::clock_gettime(CLOCK_MONOTONIC, &ts);
      core::sd::notify("RELOADING=1\nMONOTONIC_USEC=" +
                       std::to_string(ts.tv_sec * 1000000LL + ts.tv_nsec / 1000));
    }
    ++generation_;
    respawn_at_.clear();
    for (int i = 0; i < target_; ++i)
      spawn_or_retry(now_seconds());
    signal_workers(SIGTERM, true, StopReason::HUP);
    core::sd::notify("READY=1\nSTATUS=serving (generation " + std::to_string(generation_) + ")");
    break;
  case SIGTERM:
  case SIGQUIT:
    if (!stopping_) {
      log("graceful stop");
      core::sd::notify("STOPPING=1\nSTATUS=draining");
      stopping_ = true;
      stop_deadline_ = now_seconds() + opts_.graceful_timeout + 1;
      respawn_at_.clear();
      signal_workers(SIGTERM, false, StopReason::STOP);
    }
    break;
  case SIGINT:
    log("immediate stop");
    core::sd::notify("STOPPING=1");
    stopping_ = true;
    respawn_at_.clear();
    signal_workers(SIGKILL, false, StopReason::STOP);
    stop_deadline_ = now_seconds();
    break;
  case SIGTTIN:
    if (stopping_)
      break;
    if (metrics_ && target_ >= static_cast<int>(metrics_->capacity() / 2)) {
      // Half the table: a graceful restart's new generation must find slots too.
      log("workers: %d (the most the --admin metrics table holds)", target_);
      break;
    }
    ++target_;
    log("workers: %d", target_);
    spawn_or_retry(now_seconds());
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
          it->second.stop = StopReason::SHRINK;
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
  int failed = 0;
  while (!respawn_at_.empty() && respawn_at_.front() <= now) {
    respawn_at_.erase(respawn_at_.begin());
    if (alive < target_) {
      if (spawn())
        ++alive;
      else
        ++failed;
    }
  }
  for (int i = 0; i < failed; ++i)
    respawn_at_.push_back(now + 0.1);
}

int Master::run() {
  sigset_t set = master_sigset();
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  sigfd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd_ < 0) {
    log("signalfd: %s", std::strerror(errno));
    return 1;
  }
  if (metrics_) {
    if (!metrics_->ok()) {
      log("cannot map the metrics table: %s", std::strerror(errno));
      return 1;
    }
    auto admin = MasterAdmin::open(loop_, opts_.admin,
                                   [this](std::string_view path, std::string_view query) {
                                     return admin_response(path, query);
                                   });
    if (!admin) {
      log("admin address %s: %s", opts_.admin.c_str(), admin.error().c_str());
      return 1;
    }
    admin_ = std::move(*admin);
    dashboard_ = std::make_unique<MasterDashboard>(
        loop_, *metrics_,
        [this](SupervisionStats& st, std::vector<MasterDashboard::Worker>& out) {
          st = supervision_stats();
          double now = now_seconds();
          for (const auto& [pid, info] : workers_)
            out.push_back({static_cast<long>(pid), info.generation, now - info.started_at,
                           info.slot >= 0 ? metrics_->slot(info.slot).in_flight() : 0});
        },
        ev_time());
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
  if (admin_)
    log("admin on %s", opts_.admin.c_str());
  for (int i = 0; i < target_; ++i)
    spawn_or_retry(now_seconds());
  log("started %d workers", target_);
  core::sd::notify("READY=1\nSTATUS=serving with " + std::to_string(target_) + " workers");

  ev_io_set(&signal_io_, sigfd_, EV_READ);
  ev_io_start(loop_, &signal_io_);
  while (!(stopping_ && workers_.empty())) {
    double now = now_seconds();
    schedule_respawns(now);
    double timeout = -1;
    if (!respawn_at_.empty())
      timeout = std::max(0.0, *std::min_element(respawn_at_.begin(), respawn_at_.end()) - now);
    if (stopping_) {
      if (now >= stop_deadline_) {
        signal_workers(SIGKILL, false, StopReason::STOP); // graceful period over
        stop_deadline_ = now + 3600;
      }
      timeout = std::max(0.0, stop_deadline_ - now);
    }
    if (timeout >= 0) {
      ev_timer_set(&wake_, timeout + 0.001, 0);
      ev_timer_start(loop_, &wake_);
    }
    // One turn: a signal, an admin client's event or the deadline ends it. The admin's
    // connections do their work inside it, bounded as every server-core connection is.
    ev_run(loop_, EVRUN_ONCE);
    ev_timer_stop(loop_, &wake_);
    signalfd_siginfo si;
    while (::read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
      handle_signal(static_cast<int>(si.ssi_signo));
  }
  admin_.reset(); // no scrape answered by a master about to exit
  dashboard_.reset();
  for (const auto& s : sockets_)
    if (!s.unix_path.empty())
      ::unlink(s.unix_path.c_str());
  if (!opts_.pid_file.empty())
    ::unlink(opts_.pid_file.c_str());
  log("stopped");
  return 0;
}

} // namespace portico::backend
