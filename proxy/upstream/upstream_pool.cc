#include "upstream/upstream_pool.h"

#include "upstream/health_checker.h"

#include "upstream/http1_connection_pool.h"
#include "upstream/http2_connection_pool.h"

#include "core/error_log.h"
#include "tls/upstream_tls_context.h"

#include <cerrno>
#include <cstring>

namespace portico::upstream {

namespace log = core::log;

UpstreamPool::UpstreamPool(struct ev_loop* loop, core::DeferredQueue& deferred,
                           core::EndpointSpec spec, const config::ClusterConfig& cluster,
                           int max_connections, metrics::ClusterMetrics& metrics,
                           metrics::EndpointGauges& gauges, SSL_CTX* tls)
    : loop_(loop), deferred_(deferred), spec_(std::move(spec)), tls_(tls), cluster_(cluster),
      max_(static_cast<size_t>(std::max(0, max_connections))), metrics_(metrics), gauges_(gauges) {
  if (tls_) {
    SSL_CTX_up_ref(tls_);
    tls_server_name_ = cluster.tls.server_name.empty() ? spec_.host : cluster.tls.server_name;
  }
  if (cluster.protocol == config::UpstreamProtocol::H2C)
    conns_ = std::make_unique<Http2ConnectionPool>(*this);
  else
    conns_ = std::make_unique<Http1ConnectionPool>(*this);
  ev_init(&queue_timer_, queue_timer_cb);
  queue_timer_.data = this;
  if (cluster.health_check.enabled)
    checker_ = std::make_unique<HealthChecker>(*this, cluster.health_check);
  if (auto a = core::literal_address(spec_))
    set_address(*a);
}

UpstreamPool::~UpstreamPool() {
  stop_health_checks(); // first: it holds a place in the queue or a stream
  // A removed address's failures are not the endpoint's any more (the gauge is set, not
  // added: the pools of a name share it).
  if (connect_failures_ > 0)
    gauges_.connect_failures.set(0);
  ev_timer_stop(loop_, &queue_timer_);
  conns_->close_all();
  // The closed connections are disposed of: destroyed now, while what they point to lives.
  deferred_.run();
  // Its share of the endpoint's gauges goes with it.
  gauges_.idle.add(-published_idle_);
  gauges_.busy.add(-published_busy_);
  gauges_.waiting.add(-published_waiting_);
  conns_.reset();
  if (tls_session_)
    SSL_SESSION_free(tls_session_);
  if (tls_)
    SSL_CTX_free(tls_);
}

std::unique_ptr<tls::TlsSession> UpstreamPool::start_tls(int fd) const {
  SSL* ssl = tls::new_client_ssl(tls_, fd, tls_server_name_, cluster_.tls.verify, tls_session_);
  return ssl ? std::make_unique<tls::TlsSession>(ssl) : nullptr;
}

void UpstreamPool::tls_failed(const char* why) {
  core::log::write_about(core::log::Level::WARN, core::log::Kind::UPSTREAM_CONNECT, cluster_.name,
                         "cluster %s: TLS handshake with endpoint %s (%s) failed: %s",
                         cluster_.name.c_str(), spec_.text.c_str(), tls_server_name_.c_str(), why);
  note_connect_failed(UpstreamError::CONNECT_REFUSED, false);
  metrics_.errors.connect_refused().inc();
}

void UpstreamPool::keep_tls_session(SSL_SESSION* s) {
  if (tls_session_)
    SSL_SESSION_free(tls_session_);
  tls_session_ = s;
}

void UpstreamPool::acquire(UpstreamStreamListener* listener, bool fresh) {
  if (conns_->reuse(listener, fresh))
    return;
  if (conns_->room_coming() && cluster_.queue_timeout > 0) {
    enqueue(listener, false);
    return;
  }
  if (fresh && at_limit())
    conns_->close_one_idle(); // an idle connection is worth less than this retry
  if (has_address_ && !at_limit()) {
    connect_for(listener);
    return;
  }
  wait_for_room(listener);
}

void UpstreamPool::wait_for_room(UpstreamStreamListener* listener) {
  if (has_address_ && cluster_.queue_timeout <= 0) {
    metrics_.errors.queue_timeout().inc();
    listener->on_queue_timeout();
    return;
  }
  enqueue(listener, false);
}

void UpstreamPool::refuse(UpstreamStreamListener* listener) {
  if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
    metrics_.errors.local_resources().inc();
    listener->on_upstream_error(UpstreamError::LOCAL_RESOURCES, Delivery::NOT_DELIVERED);
    return;
  }
  log::write_about(log::Level::WARN, log::Kind::UPSTREAM_CONNECT, cluster_.name,
                   "cluster %s: connect to %s: %s", cluster_.name.c_str(), spec_.text.c_str(),
                   std::strerror(errno));
  note_connect_failed(UpstreamError::CONNECT_REFUSED, false);
  metrics_.errors.connect_refused().inc();
  listener->on_upstream_error(UpstreamError::CONNECT_REFUSED, Delivery::NOT_DELIVERED);
}

void UpstreamPool::enqueue(UpstreamStreamListener* listener, bool front) {
  listener->queued = true;
  if (!front)
    listener->queued_at = ev_now(loop_);
  if (front)
    wait_.push_front(listener); // back at the head: it was first in line already
  else
    wait_.push_back(listener);
  ++waiting_;
  publish();
  arm_queue_timer();
}

bool UpstreamPool::connect_for(UpstreamStreamListener* listener, bool from_queue) {
  if (!has_address_) {
    listener->on_upstream_error(UpstreamError::CONNECT_REFUSED, Delivery::NOT_DELIVERED);
    return false;
  }
  bool connected = false;
  int fd = core::connect_nonblocking(address_, &connected);
  if (fd < 0) {
    if (errno == EAGAIN && conns_->connections() > 0 && cluster_.queue_timeout > 0) {
      // A unix socket's listen backlog is full: the upstream is at capacity, not gone. Wait
      // for one of our connections to come back (or the queue timeout) rather than fail.
      enqueue(listener, from_queue);
      return false;
    }
    refuse(listener);
    return false;
  }
  ++connects_;
  conns_->open(fd, connected, listener);
  publish();
  return true;
}

void UpstreamPool::set_address(const core::SocketAddress& a) {
  address_ = a;
  has_address_ = true;
  serve_waiters();
  if (checker_)
    checker_->start();
}

bool UpstreamPool::healthy() const {
  return !checker_ || checker_->healthy();
}

void UpstreamPool::stop_health_checks() {
  if (checker_ && !checker_->healthy())
    gauges_.unhealthy.add(-1);
  checker_.reset();
}

void UpstreamPool::note_health(bool healthy) {
  gauges_.unhealthy.add(healthy ? -1 : 1);
}

void UpstreamPool::address_failed() {
  if (has_address_)
    return; // keep using the last good answer
  while (UpstreamStreamListener* l = take_waiter()) {
    metrics_.errors.connect_refused().inc();
    l->on_upstream_error(UpstreamError::CONNECT_REFUSED, Delivery::NOT_DELIVERED);
  }
}

void UpstreamPool::cancel(UpstreamStreamListener* listener) {
  if (!listener->queued)
    return;
  listener->queued = false;
  wait_.erase(listener);
  --waiting_;
  publish();
}

UpstreamStreamListener* UpstreamPool::take_waiter() {
  UpstreamStreamListener* l = wait_.front();
  if (l)
    cancel(l);
  return l;
}

void UpstreamPool::room_freed() {
  publish();
  serve_waiters();
}

void UpstreamPool::serve_waiters() {
  while (has_address_ && wait_.front()) {
    UpstreamStreamListener* l = take_waiter();
    if (conns_->reuse(l, false))
      continue;
    if (at_limit() || conns_->room_coming()) {
      enqueue(l, true); // still first in line
      return;
    }
    if (!connect_for(l, true) && l == wait_.front())
      return; // the backlog is still full: l is back at the head, waiting
  }
}

void UpstreamPool::note_connect_failed(UpstreamError e, bool say) {
  if (say)
    log::write_about(log::Level::WARN, log::Kind::UPSTREAM_CONNECT, cluster_.name,
                     "cluster %s: connect to %s: %s", cluster_.name.c_str(), spec_.text.c_str(),
                     to_string(e));
  if (connect_failures_ == 0)
    log::write_about(log::Level::WARN, log::Kind::ENDPOINT_DOWN, spec_.text,
                     "cluster %s: endpoint %s is down, passed over for %g s", cluster_.name.c_str(),
                     spec_.text.c_str(), cluster_.fail_timeout);
  ++connect_failures_;
  down_until_ = ev_now(loop_) + cluster_.fail_timeout;
  gauges_.connect_failures.set(connect_failures_);
  gauges_.down_until.set(static_cast<int64_t>(down_until_));
}

void UpstreamPool::note_connected() {
  if (connect_failures_ == 0)
    return;
  log::write_about(log::Level::INFO, log::Kind::ENDPOINT_UP, spec_.text,
                   "cluster %s: endpoint %s is up again after %lld failed connects",
                   cluster_.name.c_str(), spec_.text.c_str(),
                   static_cast<long long>(connect_failures_));
  connect_failures_ = 0;
  gauges_.connect_failures.set(0);
}

void UpstreamPool::publish() {
  auto idle = static_cast<int64_t>(conns_->idle());
  auto busy = static_cast<int64_t>(conns_->connections()) - idle;
  auto waiting = static_cast<int64_t>(waiting_);
  gauges_.idle.add(idle - published_idle_);
  gauges_.busy.add(busy - published_busy_);
  gauges_.waiting.add(waiting - published_waiting_);
  published_idle_ = idle;
  published_busy_ = busy;
  published_waiting_ = waiting;
}

void UpstreamPool::arm_queue_timer() {
  if (!wait_.front() || ev_is_active(&queue_timer_))
    return;
  double due = wait_.front()->queued_at + queue_limit() - ev_now(loop_);
  ev_timer_set(&queue_timer_, std::max(0.0, due), 0);
  ev_timer_start(loop_, &queue_timer_);
}

void UpstreamPool::queue_timer_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<UpstreamPool*>(w->data)->on_queue_timer();
}

void UpstreamPool::on_queue_timer() {
  double now = ev_now(loop_);
  // FIFO with one timeout: the oldest waiters expire first.
  while (wait_.front() && wait_.front()->queued_at + queue_limit() <= now + 0.0005) {
    UpstreamStreamListener* l = take_waiter();
    if (!has_address_) {
      // Still no answer from the resolver: a gateway timeout, not a full queue.
      metrics_.errors.connect_timeout().inc();
      l->on_upstream_error(UpstreamError::CONNECT_TIMEOUT, Delivery::NOT_DELIVERED);
      continue;
    }
    metrics_.errors.queue_timeout().inc();
    l->on_queue_timeout();
  }
  arm_queue_timer();
}

} // namespace portico::upstream
