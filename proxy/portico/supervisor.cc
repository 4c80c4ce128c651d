#include "portico/supervisor.h"

#include "config/config_diff.h"
#include "config/config_loader.h"
#include "core/error_log.h"
#include "core/sd_notify.h"
#include "filters/registry.h"
#include "portico/admin_guard.h"
#include "portico/log_file.h"
#include "portico/pid_file.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <malloc.h>
#include <unistd.h>

namespace portico::proxy {

namespace log = core::log;
namespace sd = core::sd;

namespace {
constexpr int kSignals[] = {SIGTERM, SIGQUIT, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};

std::string monotonic_usec() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::to_string(static_cast<long long>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000);
}
} // namespace

Supervisor::Supervisor(Startup s)
    // signalfd: the signals stay blocked in every thread and arrive here as file events.
    : loop_(ev_default_loop(EVFLAG_SIGNALFD)), worker_count_(s.workers), argv_(std::move(s.argv)),
      journal_(s.journal), derived_max_connections_(s.derived_max_connections),
      bounds_(s.first->config().metrics.enabled ? s.first->config().metrics.buckets
                                                : std::vector<double>{}),
      sockets_(std::move(s.sockets)),
      upgrade_(loop_, [this](pid_t pid, const std::string& why) { on_upgrade_outcome(pid, why); }),
      upgrade_child_(started_by_upgrade()) {
  ev_async_init(&done_, done_cb);
  done_.data = this;
  ev_async_start(loop_, &done_);
  ev_init(&grace_, grace_cb);
  ev_init(&goodbye_, goodbye_cb);
  ev_init(&watchdog_, watchdog_cb);
  grace_.data = this;
  goodbye_.data = this;
  next_id_ = s.first->id() + 1;
  generations_.push_back(std::move(s.first));
  ConfigGeneration& g = current();
  g.workers_running = worker_count_;
  g.workers_applied = worker_count_;
  for (int w = 0; w < worker_count_; ++w)
    workers_.push_back(
        std::make_unique<ProxyWorker>(w, worker_count_, spec_for(g, w, nullptr), loop_, &done_));
  int admin_fd = sockets_->admin_fd(g.config());
  if (admin_fd >= 0) {
    admin_ = std::make_unique<AdminHandler>(g.shared_config(), workers_, ev_time(), loop_);
    admin_ctx_ =
        std::make_unique<server::ServerContext>(loop_, *admin_, server::admin_limits("portico"));
    admin_acceptor_ = std::make_unique<server::Acceptor>(*admin_ctx_, admin_fd);
    log::write(log::Level::INFO, log::Kind::GENERAL, "admin on %s",
               g.config().admin.address.text.c_str());
    if (int control_fd = sockets_->control_fd(g.config()); control_fd >= 0) {
      control_ctx_ =
          std::make_unique<server::ServerContext>(loop_, *admin_, server::admin_limits("portico"));
      control_acceptor_ = std::make_unique<server::Acceptor>(*control_ctx_, control_fd, nullptr,
                                                             kControlSocketListener);
      log::write(log::Level::INFO, log::Kind::GENERAL, "admin control socket on %s",
                 g.config().admin.control_socket.path.c_str());
    }
  }
  start_rotations(g);
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    ev_signal_init(&signals_[i], signal_cb, kSignals[i]);
    signals_[i].data = this;
    ev_signal_start(loop_, &signals_[i]);
  }
}

Supervisor::~Supervisor() {
  control_acceptor_.reset();
  control_ctx_.reset();
  admin_acceptor_.reset();
  admin_ctx_.reset();
  workers_.clear();
  for (auto& s : signals_)
    ev_signal_stop(loop_, &s);
  ev_async_stop(loop_, &done_);
  ev_timer_stop(loop_, &grace_);
  ev_timer_stop(loop_, &goodbye_);
  ev_timer_stop(loop_, &watchdog_);
  for (auto& r : rotations_)
    ev_timer_stop(loop_, &r->timer);
}

GenerationSpec Supervisor::spec_for(const ConfigGeneration& g, int worker,
                                    const metrics::WorkerMetrics* previous) const {
  const config::Config& cfg = g.config();
  GenerationSpec spec;
  spec.id = g.id();
  spec.cfg = g.shared_config();
  if (previous) {
    const config::Config& old = generations_[generations_.size() - 2]->config();
    spec.metrics = std::make_shared<metrics::WorkerMetrics>(
        cfg, &bounds_, *previous, config::kept_clusters(old, cfg), config::kept_routes(old, cfg));
  } else {
    spec.metrics = std::make_shared<metrics::WorkerMetrics>(cfg, &bounds_);
  }
  for (size_t li = 0; li < cfg.listeners.size(); ++li) {
    SSL_CTX* tls = g.tls(li) ? g.tls(li)->get() : nullptr;
    for (int fd : sockets_->for_worker(cfg.listeners[li].address, worker, worker_count_))
      spec.listens.push_back({fd, tls, static_cast<uint16_t>(li)});
    if (cfg.listeners[li].quic.enabled)
      for (int fd : sockets_->quic_for_worker(cfg.listeners[li].address, worker, worker_count_))
        spec.quic_listens.push_back({fd, g.quic_tls(li), static_cast<uint16_t>(li)});
  }
  spec.quic_secret = quic_secret_;
  spec.access_log_fds = g.access_log_fds();
  for (size_t c = 0; c < cfg.clusters.size(); ++c)
    spec.cluster_tls.push_back(g.cluster_tls(c));
  return spec;
}

void Supervisor::start_rotations(const ConfigGeneration& g) {
  for (auto& r : rotations_)
    ev_timer_stop(loop_, &r->timer);
  rotations_.clear();
  for (size_t i = 0; i < g.config().listeners.size(); ++i) {
    if (!g.tls(i))
      continue;
    auto r = std::make_unique<Rotation>();
    r->ctx = g.tls(i);
    double every = g.config().listeners[i].tls.ticket_key_rotation;
    ev_timer_init(&r->timer, rotate_cb, every, every);
    r->timer.data = r.get();
    ev_timer_start(loop_, &r->timer);
    rotations_.push_back(std::move(r));
  }
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
  if (control_acceptor_)
    control_acceptor_->start();
  // Sockets an old process handed over that this configuration has no listener for.
  sockets_->close_unused(current().config());
  log::write(log::Level::INFO, log::Kind::GENERAL, "started %zu workers (pid %d)", workers_.size(),
             static_cast<int>(::getpid()));
  if (upgrade_child_) {
    announce_upgrade_ready(); // the old process tells systemd, and drains
    sockets_->take_ownership();
  } else
    sd::notify("READY=1\nSTATUS=serving with " + std::to_string(workers_.size()) + " workers");
  give_back_freed_memory();
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
  if (!self->handed_over_)
    sd::notify("WATCHDOG=1");
}

void Supervisor::signal_cb(struct ev_loop*, ev_signal* w, int) {
  static_cast<Supervisor*>(w->data)->on_signal(w->signum);
}
void Supervisor::done_cb(struct ev_loop*, ev_async* w, int) {
  static_cast<Supervisor*>(w->data)->on_worker_progress();
}
void Supervisor::grace_cb(struct ev_loop*, ev_timer* w, int) {
  auto* self = static_cast<Supervisor*>(w->data);
  log::write(log::Level::WARN, log::Kind::GENERAL, "grace period over; closing what is left");
  for (auto& worker : self->workers_)
    worker->stop();
}

void Supervisor::goodbye_cb(struct ev_loop*, ev_timer* w, int) {
  auto* self = static_cast<Supervisor*>(w->data);
  log::write(log::Level::INFO, log::Kind::GENERAL,
             "long-lived connections' drain window over; WebSockets are told goodbye");
  for (auto& worker : self->workers_)
    worker->goodbye();
}

void Supervisor::reload() {
  if (draining_) {
    log::write(log::Level::WARN, log::Kind::GENERAL, "reload: ignored while stopping");
    return;
  }
  sd::notify("RELOADING=1\nMONOTONIC_USEC=" + monotonic_usec() + "\nSTATUS=reloading");
  if (auto started = start_generation(); !started) {
    log::write(log::Level::ERROR, log::Kind::GENERAL,
               "reload: %s; still serving the configuration loaded before",
               started.error().c_str());
    // Unless an earlier reload is still being applied: its READY=1 comes when it is.
    if (current().workers_applied == worker_count_)
      sd::notify("READY=1\nSTATUS=reload failed; serving the previous configuration");
  }
  // Otherwise READY=1 once every worker has switched (on_worker_progress).
}

core::expected<void, std::string> Supervisor::start_generation() {
  const config::Config& old = current().config();
  std::vector<std::string> errors;
  auto next = config::load_config(old.path, &errors, filters::route_settings());
  for (const auto& e : errors)
    log::write(log::Level::ERROR, log::Kind::GENERAL, "reload: %s", e.c_str());
  if (!next)
    return core::unexpected(old.path + " has errors");
  for (const auto& w : next->warnings)
    log::write(log::Level::WARN, log::Kind::GENERAL, "reload: %s", w.c_str());
  for (const auto& what : config::restart_only_changes(old, *next))
    log::write(log::Level::WARN, log::Kind::GENERAL,
               "reload: %s, which a restart or a binary upgrade (USR2) applies; keeping the "
               "running value",
               what.c_str());
  next->server.workers = old.server.workers;
  next->server.pid_file = old.server.pid_file;
  next->server.resolvers = old.server.resolvers;
  if (next->server.max_connections == 0)
    next->server.max_connections = derived_max_connections_;  // from the open-file limit
  config::AdminAccess access = std::move(next->admin.access); // a new token applies at once
  next->admin = old.admin;
  next->admin.access = std::move(access);
  next->metrics = old.metrics;
  next->log.file = old.log.file;
  auto cfg = std::make_shared<const config::Config>(std::move(*next));
  auto prepared = ConfigGeneration::prepare(cfg, next_id_);
  if (!prepared)
    return core::unexpected(prepared.error());
  if (auto opened = sockets_->open_for(*cfg, worker_count_); !opened)
    return core::unexpected(opened.error());
  ++next_id_;
  log::configure(cfg->log.level, log::fd(), journal_);
  generations_.push_back(std::move(*prepared));
  ConfigGeneration& g = current();
  g.workers_running = worker_count_;
  for (int w = 0; w < worker_count_; ++w)
    workers_[w]->reload(spec_for(g, w, &workers_[w]->metrics()));
  if (admin_)
    admin_->set_config(g.shared_config());
  start_rotations(g);
  log::write(log::Level::INFO, log::Kind::GENERAL, "reload: loaded %s as generation %llu",
             cfg->path.c_str(), static_cast<unsigned long long>(g.id()));
  return {};
}

void Supervisor::on_worker_progress() {
  for (auto& w : workers_) {
    ProxyWorker::Progress p = w->take_progress();
    for (uint64_t id : p.applied)
      for (auto& g : generations_)
        if (g->id() == id && ++g->workers_applied == worker_count_ && g == generations_.back()) {
          // Every worker accepts for the new configuration: sockets no listener has now close.
          sockets_->close_unused(g->config());
          log::write(log::Level::INFO, log::Kind::GENERAL,
                     "reload: every worker serves generation %llu; the previous one drains",
                     static_cast<unsigned long long>(id));
          sd::notify("READY=1\nSTATUS=serving with " + std::to_string(workers_.size()) +
                     " workers (generation " + std::to_string(id) + ")");
        }
    for (uint64_t id : p.retired)
      for (auto& g : generations_)
        if (g->id() == id)
          --g->workers_running;
  }
  // A generation no worker runs any more (never the newest, which serves until the end).
  if (std::erase_if(generations_, [this](const std::unique_ptr<ConfigGeneration>& g) {
        bool gone = g->workers_running <= 0 && g != generations_.back();
        if (gone)
          log::write(log::Level::INFO, log::Kind::GENERAL, "generation %llu has drained",
                     static_cast<unsigned long long>(g->id()));
        return gone;
      }) > 0)
    give_back_freed_memory();
  for (auto& w : workers_)
    if (!w->finished())
      return;
  ev_break(loop_, EVBREAK_ALL);
}

void Supervisor::give_back_freed_memory() {
  // Loading a configuration frees what its parse held (the TOML tree: ~0.8 kB a route) in
  // pieces between blocks that stay, which glibc keeps in the heap rather than returning;
  // trimmed, 10,000 routes cost their configuration's bytes, not the parse's as well.
  ::malloc_trim(0);
}

void Supervisor::reopen_error_log() {
  const std::string& path = current().config().log.file;
  if (path.empty())
    return; // stderr: whoever holds it rotates it
  if (!reopen_log_file(path, log::fd()))
    log::write(log::Level::ERROR, log::Kind::GENERAL,
               "reopening error log %s: %s; still writing to the old file", path.c_str(),
               std::strerror(errno));
}

void Supervisor::reopen_logs() {
  // logrotate renamed the files and sent USR1 (log_file.h).
  int reopened = 0;
  for (const auto& g : generations_)
    reopened += g->reopen_access_logs();
  reopen_error_log();
  log::write(log::Level::INFO, log::Kind::GENERAL, "reopened %d access log(s)", reopened);
}

void Supervisor::upgrade() {
  if (draining_ || handed_over_) {
    log::write(log::Level::WARN, log::Kind::GENERAL, "upgrade: ignored while stopping");
    return;
  }
  std::vector<int> fds = sockets_->all_fds();
  if (auto started = upgrade_.start(argv_, fds, sockets_->environment_value()); !started) {
    log::write(log::Level::ERROR, log::Kind::GENERAL, "upgrade: %s; still serving",
               started.error().c_str());
    return;
  }
  log::write(log::Level::INFO, log::Kind::GENERAL,
             "upgrade: started %s with %zu listening sockets; waiting for it to serve",
             argv_[0].c_str(), fds.size());
}

void Supervisor::on_upgrade_outcome(pid_t pid, const std::string& why) {
  if (pid <= 0) {
    log::write(log::Level::ERROR, log::Kind::GENERAL, "upgrade: %s; still serving", why.c_str());
    return;
  }
  log::write(log::Level::INFO, log::Kind::GENERAL,
             "upgrade: pid %d serves; this process drains and exits", static_cast<int>(pid));
  // systemd follows the new process from here: only the main pid may notify.
  sd::notify("MAINPID=" + std::to_string(pid) + "\nREADY=1\nSTATUS=upgraded to pid " +
             std::to_string(pid));
  handed_over_ = true;
  sockets_->handed_over();
  // The admin socket is the new process's too: probes go to the process that stays.
  if (admin_acceptor_)
    admin_acceptor_->stop();
  if (control_acceptor_)
    control_acceptor_->stop();
  begin_drain("drain after the upgrade");
}

void Supervisor::begin_drain(const char* why) {
  if (draining_)
    return;
  log::write(log::Level::INFO, log::Kind::GENERAL, "%s", why);
  if (!handed_over_) { // after an upgrade the sockets and systemd's attention are the new one's
    sd::notify("STOPPING=1\nSTATUS=draining: finishing in-flight requests");
    sockets_->stop_listening();
  }
  draining_ = true;
  if (admin_)
    admin_->set_draining(); // /readyz fails from now on
  for (auto& w : workers_)
    w->drain();
  const config::ServerConfig& s = current().config().server;
  ev_timer_set(&grace_, s.grace_period, 0);
  ev_timer_start(loop_, &grace_);
  // The goodbye leaves its close handshake a second before the grace period cuts.
  ev_timer_set(&goodbye_, std::min(s.long_lived_drain, std::max(0.0, s.grace_period - 1)), 0);
  ev_timer_start(loop_, &goodbye_);
}

void Supervisor::on_signal(int sig) {
  switch (sig) {
  case SIGUSR1: reopen_logs(); return;
  case SIGUSR2: upgrade(); return;
  case SIGHUP: reload(); return;
  case SIGINT:
    log::write(log::Level::INFO, log::Kind::GENERAL, "immediate stop");
    if (!handed_over_)
      sd::notify("STOPPING=1\nSTATUS=stopping now");
    for (auto& w : workers_)
      w->stop();
    return;
  default: begin_drain("graceful stop"); return;
  }
}

} // namespace portico::proxy
