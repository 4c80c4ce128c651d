#include "portico/proxy_worker.h"

#include "core/block_pool.h"
#include "core/error_log.h"

#include <algorithm>
#include <utility>

namespace portico::proxy {

ProxyWorker::ProxyWorker(int index, int count, GenerationSpec first, struct ev_loop* main_loop,
                         ev_async* done)
    : loop_(ev_loop_new(EVFLAG_AUTO)), metrics_(first.metrics),
      deferred_(std::make_unique<core::DeferredQueue>(loop_)),
      resolver_(std::make_unique<upstream::DnsResolver>(loop_)),
      services_{loop_, *deferred_, *resolver_, stats_, index, count}, main_loop_(main_loop),
      done_(done), name_("worker " + std::to_string(index)) {
  // The worker's one deferral queue serves its client and upstream connections alike.
  live_.push_back(std::make_unique<WorkerGeneration>(services_, std::move(first), nullptr));
  ev_async_init(&async_, async_cb);
  async_.data = this;
  ev_async_start(loop_, &async_);
  ev_init(&heartbeat_timer_, heartbeat_cb);
  heartbeat_timer_.data = this;
  ev_init(&reap_, reap_cb);
  reap_.data = this;
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
  retired_.clear();
  live_.clear();
  resolver_.reset(); // after the clusters: pending answers are dropped, not delivered
  deferred_.reset();
  ev_async_stop(loop_, &async_);
  ev_timer_stop(loop_, &heartbeat_timer_);
  ev_timer_stop(loop_, &reap_);
  ev_loop_destroy(loop_);
}

void ProxyWorker::start() {
  live_.back()->start_accepting();
  thread_ = std::thread([this] { run(); });
}

void ProxyWorker::run() {
  core::log::set_thread_name(name_.c_str());
  core::BlockPool::local().publish_to(&stats_.buffer_blocks);
  ev_run(loop_, 0);
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

void ProxyWorker::reap_cb(struct ev_loop*, ev_timer* w, int) {
  // Outside every callback of the generations destroyed here.
  static_cast<ProxyWorker*>(w->data)->retired_.clear();
}

void ProxyWorker::report() {
  ev_async_send(main_loop_, done_);
}

void ProxyWorker::on_async() {
  int cmd = command_.load();
  if (cmd == 2) {
    for (auto& g : live_)
      g->close_all();
    ev_break(loop_, EVBREAK_ALL);
    return;
  }
  std::vector<GenerationSpec> pending;
  {
    std::lock_guard lock(mailbox_mu_);
    pending.swap(pending_);
  }
  for (auto& spec : pending)
    if (!draining_)
      apply(std::move(spec));
  if (cmd == 1 && !draining_) {
    draining_ = true;
    // This worker's accept sockets stop; the listening fds close in the supervisor.
    std::vector<WorkerGeneration*> all;
    for (auto& g : live_)
      all.push_back(g.get());
    for (WorkerGeneration* g : all)
      g->drain([this, g] { retire(g); });
  }
}

void ProxyWorker::apply(GenerationSpec spec) {
  uint64_t id = spec.id;
  WorkerGeneration* old = live_.back().get();
  live_.push_back(std::make_unique<WorkerGeneration>(services_, std::move(spec), old));
  // In one loop pass: the sockets kept are never left without an acceptor.
  live_.back()->start_accepting();
  old->drain([this, old] { retire(old); });
  {
    std::lock_guard lock(mailbox_mu_);
    progress_.applied.push_back(id);
  }
  report();
}

void ProxyWorker::retire(WorkerGeneration* g) {
  auto it = std::find_if(live_.begin(), live_.end(), [g](const auto& p) { return p.get() == g; });
  if (it == live_.end())
    return;
  uint64_t id = g->id();
  retired_.push_back(std::move(*it));
  live_.erase(it);
  if (!ev_is_active(&reap_)) {
    ev_timer_set(&reap_, 0, 0);
    ev_timer_start(loop_, &reap_);
  }
  {
    std::lock_guard lock(mailbox_mu_);
    progress_.retired.push_back(id);
  }
  report();
  if (draining_ && live_.empty())
    ev_break(loop_, EVBREAK_ALL);
}

} // namespace portico::proxy
