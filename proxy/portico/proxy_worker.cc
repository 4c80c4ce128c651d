#include "portico/proxy_worker.h"

#include "config/config_diff.h"
#include "core/block_pool.h"
#include "core/error_log.h"

#include <algorithm>
#include <utility>

namespace portico::proxy {

namespace {
// How often old generations are looked at while some are left: freeing them is not urgent,
// and looking costs two loads each.
constexpr ev_tstamp kRetireCheck = 0.25;
// A stop closes lingering (ServerContext::close_all_lingering); clients that neither read nor
// close are cut after this long.
constexpr ev_tstamp kStopLinger = 1.0;

// Each listener index of old's its index in next, by socket; -1 for one next has not.
std::vector<int> listener_map(const config::Config& old, const config::Config& next) {
  std::vector<int> map;
  for (const auto& l : old.listeners) {
    int to = -1;
    for (size_t i = 0; i < next.listeners.size(); ++i)
      if (config::socket_key(next.listeners[i].address) == config::socket_key(l.address))
        to = static_cast<int>(i);
    map.push_back(to);
  }
  return map;
}
} // namespace

ProxyWorker::ProxyWorker(int index, int count, GenerationSpec first, struct ev_loop* main_loop,
                         ev_async* done)
    : loop_(ev_loop_new(EVFLAG_AUTO)), metrics_(first.metrics),
      deferred_(std::make_unique<core::DeferredQueue>(loop_)),
      resolver_(std::make_unique<upstream::DnsResolver>(loop_, first.cfg->server.resolvers)),
      services_{loop_, *deferred_, *resolver_, index, count}, main_loop_(main_loop), done_(done),
      name_("worker " + std::to_string(index)) {
  live_.push_back(std::make_unique<WorkerGeneration>(services_, std::move(first), nullptr));
  WorkerGeneration& g = *live_.back();
  // The worker's one deferral queue serves its client and upstream connections alike.
  ctx_ = std::make_unique<server::ServerContext>(
      loop_, g.router(), limits_for(*g.spec().cfg, count), *deferred_, stats_);
  g.epoch = ctx_->epoch();
  ev_async_init(&async_, async_cb);
  async_.data = this;
  ev_async_start(loop_, &async_);
  ev_init(&heartbeat_timer_, heartbeat_cb);
  heartbeat_timer_.data = this;
  ev_init(&retire_, retire_cb);
  retire_.data = this;
  ev_init(&stop_timer_, stop_cb);
  stop_timer_.data = this;
}

void ProxyWorker::enable_heartbeat(double every) {
  heartbeat_.store(ev_time(), std::memory_order_relaxed);
  ev_timer_set(&heartbeat_timer_, every, every);
  ev_timer_start(loop_, &heartbeat_timer_);
}

void ProxyWorker::heartbeat_cb(struct ev_loop* loop, ev_timer* w, int) {
  static_cast<ProxyWorker*>(w->data)->heartbeat_.store(ev_now(loop), std::memory_order_relaxed);
}

ProxyWorker::~ProxyWorker() {
  join();
  tear_down(); // a worker never started: nothing of it ran on another thread
  ev_async_stop(loop_, &async_);
  ev_loop_destroy(loop_);
}

void ProxyWorker::tear_down() {
  if (torn_down_)
    return;
  torn_down_ = true;
  acceptors_.clear();
  quic_.clear(); // before the context, which its connections use
  ctx_.reset();  // its exchanges finish first: they use the generations' routers
  live_.clear();
  resolver_.reset(); // after the clusters: pending answers are dropped, not delivered
  deferred_.reset();
  ev_timer_stop(loop_, &heartbeat_timer_);
  ev_timer_stop(loop_, &retire_);
  ev_timer_stop(loop_, &stop_timer_);
}

void ProxyWorker::start_accepting(const GenerationSpec& spec) {
  // The new acceptors are running before the old ones go: a socket kept is never without one.
  std::vector<std::unique_ptr<server::Acceptor>> next;
  for (const Listen& l : spec.listens) {
    auto a = std::make_unique<server::Acceptor>(*ctx_, l.fd, l.tls, l.listener);
    a->start();
    next.push_back(std::move(a));
  }
  acceptors_.swap(next);
  // A QUIC endpoint stays with its socket: its connections live on, new ones take the new
  // settings. One whose listener went closes its connections.
  std::vector<std::unique_ptr<quic::QuicEndpoint>> kept;
  for (const QuicListen& q : spec.quic_listens) {
    const config::QuicConfig& qc = spec.cfg->listeners[q.listener].quic;
    auto it = std::find_if(quic_.begin(), quic_.end(), [&](auto& e) { return e->fd() == q.fd; });
    if (it != quic_.end()) {
      (*it)->update(q.tls, qc, q.listener);
      kept.push_back(std::move(*it));
      quic_.erase(it);
    } else {
      kept.push_back(std::make_unique<quic::QuicEndpoint>(*ctx_, q.fd, q.tls, qc, spec.quic_secret,
                                                          static_cast<uint8_t>(services_.index),
                                                          q.listener));
    }
  }
  quic_.swap(kept); // what is left in kept now had its listener removed: gone
}

void ProxyWorker::start() {
  start_accepting(live_.back()->spec());
  thread_ = std::thread([this] { run(); });
}

void ProxyWorker::run() {
  core::log::set_thread_name(name_.c_str());
  live_.back()->router().start(loop_); // the first generation was made on the main thread
  core::BlockPool::local().publish_to(&stats_.buffer_blocks);
  ev_run(loop_, 0);
  // On this thread, as small_allocator.h asks: what the worker's objects took from this
  // thread's free lists and block pool goes back to them, not to the joining thread's.
  tear_down();
  core::BlockPool::local().publish_to(nullptr);
  finished_.store(true, std::memory_order_release);
  ev_async_send(main_loop_, done_);
}

void ProxyWorker::reload(GenerationSpec spec) {
  metrics_ = spec.metrics;
  {
    std::lock_guard lock(mailbox_mu_);
    pending_.push_back(std::move(spec));
  }
  ev_async_send(loop_, &async_);
}

ProxyWorker::Progress ProxyWorker::take_progress() {
  std::lock_guard lock(mailbox_mu_);
  return std::exchange(progress_, Progress{});
}

void ProxyWorker::drain() {
  int expected = 0;
  command_.compare_exchange_strong(expected, 1);
  ev_async_send(loop_, &async_);
}

void ProxyWorker::goodbye() {
  goodbye_.store(true);
  ev_async_send(loop_, &async_);
}

void ProxyWorker::purge(std::shared_ptr<PurgeJob> job) {
  {
    std::lock_guard lock(mailbox_mu_);
    purges_.push_back(std::move(job));
  }
  ev_async_send(loop_, &async_);
}

void ProxyWorker::stop() {
  command_.store(2);
  ev_async_send(loop_, &async_);
}

void ProxyWorker::join() {
  if (thread_.joinable())
    thread_.join();
}

void ProxyWorker::async_cb(struct ev_loop*, ev_async* w, int) {
  static_cast<ProxyWorker*>(w->data)->on_async();
}

void ProxyWorker::report() {
  ev_async_send(main_loop_, done_);
}

void ProxyWorker::on_async() {
  int cmd = command_.load();
  if (cmd == 2) {
    if (stopping_)
      return;
    stopping_ = true;
    acceptors_.clear();
    quic_.clear();
    ctx_->close_all_lingering([this] { ev_break(loop_, EVBREAK_ALL); });
    ev_timer_set(&stop_timer_, kStopLinger, 0);
    ev_timer_start(loop_, &stop_timer_);
    return;
  }
  std::vector<GenerationSpec> pending;
  std::vector<std::shared_ptr<PurgeJob>> purges;
  {
    std::lock_guard lock(mailbox_mu_);
    pending.swap(pending_);
    purges.swap(purges_);
  }
  for (auto& job : purges) {
    size_t n = 0;
    for (auto& g : live_) // an older generation's exchanges may still store
      n += g->router().purge(job->request);
    job->purged.fetch_add(n);
    job->worker_done();
  }
  for (auto& spec : pending)
    if (!draining_)
      apply(std::move(spec));
  if (cmd == 1 && !draining_) {
    draining_ = true;
    acceptors_.clear(); // this worker's accept sockets stop; the listening fds close in main
    ctx_->begin_drain([this] { ev_break(loop_, EVBREAK_ALL); });
  }
  if (draining_ && goodbye_.exchange(false))
    ctx_->goodbye();
}

void ProxyWorker::apply(GenerationSpec spec) {
  uint64_t id = spec.id;
  WorkerGeneration* old = live_.back().get();
  live_.push_back(std::make_unique<WorkerGeneration>(services_, std::move(spec), old));
  WorkerGeneration& g = *live_.back();
  g.router().start(loop_);
  const config::Config& cfg = *g.spec().cfg;
  ctx_->reconfigure(g.router(), limits_for(cfg, services_.count),
                    listener_map(*old->spec().cfg, cfg));
  g.epoch = ctx_->epoch();
  start_accepting(g.spec());
  if (!ev_is_active(&retire_)) {
    ev_timer_set(&retire_, kRetireCheck, kRetireCheck);
    ev_timer_start(loop_, &retire_);
  }
  {
    std::lock_guard lock(mailbox_mu_);
    progress_.applied.push_back(id);
  }
  report();
  retire_unused();
}

void ProxyWorker::stop_cb(struct ev_loop* loop, ev_timer* w, int) {
  static_cast<ProxyWorker*>(w->data)->ctx_->close_all();
  ev_break(loop, EVBREAK_ALL);
}

void ProxyWorker::retire_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<ProxyWorker*>(w->data)->retire_unused();
}

void ProxyWorker::retire_unused() {
  // From a timer (or right after a switch): outside every callback of what is freed here.
  std::vector<uint64_t> retired;
  for (size_t i = 0; i + 1 < live_.size();) {
    if (live_[i]->unused(*ctx_)) {
      retired.push_back(live_[i]->id());
      live_.erase(live_.begin() + static_cast<ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  if (live_.size() == 1)
    ev_timer_stop(loop_, &retire_);
  if (retired.empty())
    return;
  {
    std::lock_guard lock(mailbox_mu_);
    progress_.retired.insert(progress_.retired.end(), retired.begin(), retired.end());
  }
  report();
}

} // namespace portico::proxy
