#include "portico/proxy_worker.h"

#include "core/block_pool.h"
#include "core/error_log.h"

#include <unistd.h>

namespace portico::proxy {

namespace {
// A whole-process limit as one worker's share (rounded up, so the whole is never below it).
uint32_t share(int limit, int workers) {
  return limit <= 0 ? 0 : static_cast<uint32_t>((limit + workers - 1) / workers);
}

server::ServerLimits limits_from(const config::Config& cfg, int workers) {
  server::ServerLimits l;
  l.max_connections = share(cfg.server.max_connections, workers);
  double blocks = cfg.server.max_buffer_memory / sizeof(core::Block);
  l.max_buffer_blocks = blocks > 0 ? static_cast<int64_t>(blocks / workers) + 1 : 0;
  l.max_buffered_response_bytes = static_cast<size_t>(cfg.server.max_buffered_response_bytes);
  for (const auto& listener : cfg.listeners)
    l.listener_max_connections.push_back(share(listener.max_connections, workers));
  l.keepalive_timeout = cfg.server.keepalive_timeout;
  l.header_timeout = cfg.server.header_timeout;
  l.send_timeout = cfg.server.send_timeout;
  l.parser.max_header_bytes = cfg.server.max_header_bytes;
  l.parser.max_body_bytes = cfg.server.max_body_bytes;
  l.h2_max_concurrent_streams = static_cast<uint32_t>(cfg.server.h2_max_concurrent_streams);
  l.server_name = "portico";
  return l;
}
} // namespace

ProxyWorker::ProxyWorker(const config::Config& cfg, int index, int count,
                         std::vector<Listen> listens, const std::vector<double>* bounds,
                         const std::vector<int>& access_log_fds, struct ev_loop* main_loop,
                         ev_async* done)
    : listens_(std::move(listens)), main_loop_(main_loop), done_(done),
      name_("worker " + std::to_string(index)) {
  loop_ = ev_loop_new(EVFLAG_AUTO);
  metrics_ = std::make_unique<metrics::WorkerMetrics>(cfg, bounds);
  deferred_ = std::make_unique<core::DeferredQueue>(loop_);
  resolver_ = std::make_unique<upstream::DnsResolver>(loop_);
  std::vector<std::unique_ptr<upstream::Cluster>> clusters;
  for (size_t i = 0; i < cfg.clusters.size(); ++i)
    clusters.push_back(std::make_unique<upstream::Cluster>(
        loop_, *deferred_, *resolver_, cfg.clusters[i], index, count, metrics_->cluster(i)));
  for (size_t i = 0; i < cfg.listeners.size(); ++i)
    access_logs_.push_back(
        access_log_fds[i] < 0
            ? nullptr
            : std::make_unique<metrics::AccessLog>(loop_, access_log_fds[i],
                                                   cfg.listeners[i].access_log_format == "json"));
  router_ = std::make_unique<upstream::Router>(cfg, std::move(clusters), *metrics_, access_logs_);
  // The worker's one deferral queue serves its client and upstream connections alike.
  ctx_ =
      std::make_unique<server::ServerContext>(loop_, *router_, limits_from(cfg, count), *deferred_);
  ev_async_init(&async_, async_cb);
  async_.data = this;
  ev_async_start(loop_, &async_);
  ev_init(&heartbeat_timer_, heartbeat_cb);
  heartbeat_timer_.data = this;
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
  acceptors_.clear();
  ctx_.reset();
  router_.reset();
  access_logs_.clear();
  resolver_.reset(); // after the clusters: pending answers are dropped, not delivered
  deferred_.reset();
  ev_async_stop(loop_, &async_);
  ev_timer_stop(loop_, &heartbeat_timer_);
  ev_loop_destroy(loop_);
}

void ProxyWorker::start() {
  for (const Listen& l : listens_) {
    auto a = std::make_unique<server::Acceptor>(*ctx_, l.fd, l.tls, l.listener);
    a->start();
    acceptors_.push_back(std::move(a));
  }
  thread_ = std::thread([this] { run(); });
}

void ProxyWorker::run() {
  core::log::set_thread_name(name_.c_str());
  core::BlockPool::local().publish_to(&ctx_->stats().buffer_blocks);
  ev_run(loop_, 0);
  core::BlockPool::local().publish_to(nullptr);
  finished_.store(true, std::memory_order_release);
  ev_async_send(main_loop_, done_);
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

void ProxyWorker::on_async() {
  int cmd = command_.load();
  if (cmd == 2) {
    acceptors_.clear();
    ctx_->close_all();
    ev_break(loop_, EVBREAK_ALL);
    return;
  }
  if (cmd == 1 && !draining_) {
    draining_ = true;
    acceptors_.clear(); // this worker's accept sockets stop; the listening fds close in main
    ctx_->begin_drain([this] { ev_break(loop_, EVBREAK_ALL); });
  }
}

} // namespace portico::proxy
