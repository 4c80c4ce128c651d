#include "portico/supervisor.h"

#include "config/config_loader.h"
#include "core/error_log.h"
#include "core/sd_notify.h"
#include "metrics/histogram.h"
#include "portico/log_file.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace portico::proxy {

namespace log = core::log;
namespace sd = core::sd;

namespace {
constexpr int kSignals[] = {SIGTERM, SIGQUIT, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
}

Supervisor::Supervisor(const config::Config& cfg,
                       std::vector<std::vector<ProxyWorker::Listen>> listens, int admin_fd,
                       const std::vector<int>& access_log_fds,
                       const std::vector<tls::TlsContext*>& tls)
    : cfg_(cfg), access_log_fds_(access_log_fds),
      bounds_(cfg.metrics.enabled ? cfg.metrics.buckets : std::vector<double>{}) {
  // signalfd: the signals stay blocked in every thread and arrive here as file events.
  loop_ = ev_default_loop(EVFLAG_SIGNALFD);
  ev_async_init(&done_, done_cb);
  done_.data = this;
  ev_async_start(loop_, &done_);
  ev_init(&grace_, grace_cb);
  ev_init(&watchdog_, watchdog_cb);
  grace_.data = this;
  int count = static_cast<int>(listens.size());
  for (int w = 0; w < count; ++w)
    workers_.push_back(std::make_unique<ProxyWorker>(cfg, w, count, std::move(listens[w]), &bounds_,
                                                     access_log_fds, loop_, &done_));
  if (admin_fd >= 0) {
    admin_ = std::make_unique<AdminHandler>(cfg, workers_, ev_time());
    admin_ctx_ =
        std::make_unique<server::ServerContext>(loop_, *admin_, server::admin_limits("portico"));
    admin_acceptor_ = std::make_unique<server::Acceptor>(*admin_ctx_, admin_fd);
  }
  for (size_t i = 0; i < tls.size() && i < cfg.listeners.size(); ++i) {
    if (!tls[i])
      continue;
    auto r = std::make_unique<Rotation>();
    r->ctx = tls[i];
    double every = cfg.listeners[i].tls.ticket_key_rotation;
    ev_timer_init(&r->timer, rotate_cb, every, every);
    r->timer.data = r.get();
    ev_timer_start(loop_, &r->timer);
    rotations_.push_back(std::move(r));
  }
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    ev_signal_init(&signals_[i], signal_cb, kSignals[i]);
    signals_[i].data = this;
    ev_signal_start(loop_, &signals_[i]);
  }
}

Supervisor::~Supervisor() {
  admin_acceptor_.reset();
  admin_ctx_.reset();
  workers_.clear();
  for (auto& s : signals_)
    ev_signal_stop(loop_, &s);
  ev_async_stop(loop_, &done_);
  ev_timer_stop(loop_, &grace_);
  ev_timer_stop(loop_, &watchdog_);
  for (auto& r : rotations_)
    ev_timer_stop(loop_, &r->timer);
}

void Supervisor::rotate_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<Rotation*>(w->data)->ctx->rotate_ticket_keys();
}

int Supervisor::run() {
  double watchdog = sd::watchdog_interval();
  for (auto& w : workers_) {
    if (watchdog > 0)
      w->enable_heartbeat(watchdog / 4);
    w->start();
  }
  if (watchdog > 0) {
    ev_timer_set(&watchdog_, watchdog / 2, watchdog / 2);
    watchdog_.data = this;
    ev_timer_start(loop_, &watchdog_);
  }
  if (admin_acceptor_)
    admin_acceptor_->start();
  log::write(log::Level::INFO, log::Kind::GENERAL, "started %zu workers", workers_.size());
  sd::notify("READY=1\nSTATUS=serving with " + std::to_string(workers_.size()) + " workers");
  ev_run(loop_, 0);
  for (auto& w : workers_)
    w->join();
  log::write(log::Level::INFO, log::Kind::GENERAL, "stopped");
  return 0;
}

void Supervisor::watchdog_cb(struct ev_loop*, ev_timer* w, int) {
  auto* self = static_cast<Supervisor*>(w->data);
  // Fed only while every worker's loop turns: a worker stuck in a loop that never returns
  // lets systemd restart the service, as WatchdogSec= means.
  double now = ev_time(), limit = w->repeat * 2;
  for (size_t i = 0; i < self->workers_.size(); ++i)
    if (!self->workers_[i]->finished() && now - self->workers_[i]->heartbeat() > limit) {
      log::write(log::Level::ERROR, log::Kind::GENERAL,
                 "worker %zu has not turned its loop for %.1f s; not feeding the watchdog", i,
                 now - self->workers_[i]->heartbeat());
      return;
    }
  sd::notify("WATCHDOG=1");
}

void Supervisor::signal_cb(struct ev_loop*, ev_signal* w, int) {
  static_cast<Supervisor*>(w->data)->on_signal(w->signum);
}
void Supervisor::done_cb(struct ev_loop*, ev_async* w, int) {
  static_cast<Supervisor*>(w->data)->on_worker_done();
}
void Supervisor::grace_cb(struct ev_loop*, ev_timer* w, int) {
  auto* self = static_cast<Supervisor*>(w->data);
  log::write(log::Level::WARN, log::Kind::GENERAL, "grace period over; closing what is left");
  for (auto& worker : self->workers_)
    worker->stop();
}

void Supervisor::check_configuration() {
  // Applying a new configuration is not built yet; checking it is, so that an operator who
  // sends HUP learns at once whether the file would load (the errors as FILE:LINE:COL) and
  // that the old configuration stays in force either way.
  std::vector<std::string> errors;
  auto next = config::load_config(cfg_.path, &errors);
  for (const auto& e : errors)
    log::write(log::Level::ERROR, log::Kind::GENERAL, "reload: %s", e.c_str());
  if (!next) {
    log::write(log::Level::ERROR, log::Kind::GENERAL,
               "reload: %s has errors; still serving the configuration loaded at start",
               cfg_.path.c_str());
    return;
  }
  log::write(log::Level::WARN, log::Kind::GENERAL,
             "reload: %s is valid, but applying a configuration while running is not supported "
             "yet; still serving the one loaded at start (restart to apply it)",
             cfg_.path.c_str());
}

void Supervisor::reopen_error_log() {
  if (cfg_.log.file.empty())
    return; // stderr: whoever holds it rotates it
  if (!reopen_log_file(cfg_.log.file, log::fd()))
    log::write(log::Level::ERROR, log::Kind::GENERAL,
               "reopening error log %s: %s; still writing to the old file", cfg_.log.file.c_str(),
               std::strerror(errno));
}

void Supervisor::reopen_logs() {
  // logrotate renamed the files and sent USR1 (log_file.h).
  int reopened = 0;
  for (size_t i = 0; i < access_log_fds_.size() && i < cfg_.listeners.size(); ++i) {
    if (access_log_fds_[i] < 0)
      continue;
    const std::string& path = cfg_.listeners[i].access_log;
    if (!reopen_log_file(path, access_log_fds_[i])) {
      log::write(log::Level::ERROR, log::Kind::GENERAL,
                 "reopening access log %s: %s; still writing to the old file", path.c_str(),
                 std::strerror(errno));
      continue;
    }
    ++reopened;
  }
  reopen_error_log();
  log::write(log::Level::INFO, log::Kind::GENERAL, "reopened %d access log(s)", reopened);
}

void Supervisor::on_signal(int sig) {
  if (sig == SIGUSR1) {
    reopen_logs();
    return;
  }
  if (sig == SIGUSR2) {
    log::write(log::Level::WARN, log::Kind::GENERAL,
               "binary upgrade is not supported yet; ignoring USR2");
    return;
  }
  if (sig == SIGHUP) {
    check_configuration();
    return;
  }
  if (sig == SIGINT) {
    log::write(log::Level::INFO, log::Kind::GENERAL, "immediate stop");
    sd::notify("STOPPING=1\nSTATUS=stopping now");
    for (auto& w : workers_)
      w->stop();
    return;
  }
  if (draining_)
    return;
  log::write(log::Level::INFO, log::Kind::GENERAL, "graceful stop");
  sd::notify("STOPPING=1\nSTATUS=draining: finishing in-flight requests");
  draining_ = true;
  if (admin_)
    admin_->set_draining(); // /readyz fails from now on
  for (auto& w : workers_)
    w->drain();
  ev_timer_set(&grace_, cfg_.server.grace_period, 0);
  ev_timer_start(loop_, &grace_);
}

void Supervisor::on_worker_done() {
  for (auto& w : workers_)
    if (!w->finished())
      return;
  ev_break(loop_, EVBREAK_ALL);
}

} // namespace portico::proxy
