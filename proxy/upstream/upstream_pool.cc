#include "upstream/upstream_pool.h"

#include "upstream/http1_upstream_connection.h"
#include "upstream/http2_upstream_connection.h"

#include <algorithm>
#include <cerrno>

namespace portico::upstream {

namespace {
// Without a hint from the upstream, retire idle connections after this long: shorter than
// the common defaults (nginx 75 s, Apache 5 s, portico-backend 5 s), and an EOF seen while idle
// retires them sooner.
constexpr double kDefaultIdle = 4.0;
// Retire this much before an advertised keep-alive timeout: the close must not race the reuse.
constexpr double kIdleMargin = 0.5;
// A learned idle timeout is used at this fraction: the upstream's clock and ours drift, and its
// close takes a while to arrive.
constexpr double kLearnedFraction = 0.75;
// A close sooner than this after going idle is not an idle timeout (a worker retiring, a
// restart) and teaches nothing.
constexpr double kMinLearnedIdle = 0.2;
} // namespace

static_assert(static_cast<size_t>(UpstreamError::LOCAL_RESOURCES) + 1 == metrics::kErrorRetried,
              "UpstreamError's values are the first metric error kinds, in order");
static_assert(std::string_view(metrics::kUpstreamErrorKinds[metrics::kErrorQueueTimeout]) ==
              "queue_timeout");

const char* to_string(UpstreamError e) {
  switch (e) {
  case UpstreamError::CONNECT_REFUSED: return "connect_refused";
  case UpstreamError::CONNECT_TIMEOUT: return "connect_timeout";
  case UpstreamError::RESET: return "reset";
  case UpstreamError::RESPONSE_TIMEOUT: return "response_timeout";
  case UpstreamError::PROTOCOL_ERROR: return "protocol_error";
  case UpstreamError::LOCAL_RESOURCES: return "local_resources";
  }
  return "unknown";
}

UpstreamPool::UpstreamPool(struct ev_loop* loop, core::DeferredQueue& deferred, EndpointSpec spec,
                           const config::ClusterConfig& cluster, int max_connections,
                           metrics::ClusterMetrics& metrics, metrics::EndpointGauges& gauges)
    : loop_(loop), deferred_(deferred), spec_(std::move(spec)), cluster_(cluster),
      max_(static_cast<size_t>(std::max(0, max_connections))), metrics_(metrics), gauges_(gauges),
      h2_(cluster.protocol == "h2c") {
  if (auto a = literal_address(spec_))
    set_address(*a);
  ev_init(&queue_timer_, queue_timer_cb);
  queue_timer_.data = this;
  ev_init(&idle_timer_, idle_timer_cb);
  idle_timer_.data = this;
  reaper_.pool = this;
}

UpstreamPool::~UpstreamPool() {
  ev_timer_stop(loop_, &queue_timer_);
  ev_timer_stop(loop_, &idle_timer_);
  while (idle_.front()) {
    Http1UpstreamConnection* u = idle_.front();
    unlink_idle(u);
    u->close();
  }
  while (h2_conns_.front())
    h2_conns_.front()->close(UpstreamError::RESET);
  deferred_.cancel(&reaper_);
  reaper_.run_deferred();
}

void UpstreamPool::acquire(UpstreamStreamListener* client, bool fresh) {
  if (h2_) {
    acquire_h2(client);
    return;
  }
  while (!fresh && idle_.front()) {
    Http1UpstreamConnection* u = idle_.front();
    unlink_idle(u);
    if (u->idle_event_pending()) {
      // The upstream closed it or sent something since it went idle, in this very loop
      // iteration (the idle watcher has not run yet): not this request's connection.
      u->close();
      continue;
    }
    ++reuses_;
    u->attach(client, client->is_head_request());
    client->on_upstream_ready(*u);
    return;
  }
  if (fresh && idle_.front() && max_ > 0 && total_ >= max_) {
    // Make room: an idle connection is worth less than this retry.
    Http1UpstreamConnection* u = idle_.back();
    unlink_idle(u);
    u->close();
  }
  if (has_address_ && (max_ == 0 || total_ < max_)) {
    connect_for(client);
    return;
  }
  wait_for_room(client);
}

void UpstreamPool::wait_for_room(UpstreamStreamListener* client) {
  if (has_address_ && cluster_.queue_timeout <= 0) {
    metrics_.errors[metrics::kErrorQueueTimeout].inc();
    client->on_queue_timeout();
    return;
  }
  enqueue(client, false);
}

void UpstreamPool::refuse(UpstreamStreamListener* client) {
  if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
    metrics_.errors[static_cast<int>(UpstreamError::LOCAL_RESOURCES)].inc();
    client->on_upstream_error(UpstreamError::LOCAL_RESOURCES, Delivery::NOT_DELIVERED);
    return;
  }
  note_connect_failed();
  metrics_.errors[static_cast<int>(UpstreamError::CONNECT_REFUSED)].inc();
  client->on_upstream_error(UpstreamError::CONNECT_REFUSED, Delivery::NOT_DELIVERED);
}

void UpstreamPool::enqueue(UpstreamStreamListener* client, bool front) {
  client->queued = true;
  if (!front)
    client->queued_at = ev_now(loop_);
  if (front)
    wait_.push_front(client); // back at the head: it was first in line already
  else
    wait_.push_back(client);
  ++waiting_;
  publish();
  arm_queue_timer();
}

bool UpstreamPool::connect_for(UpstreamStreamListener* client, bool from_queue) {
  if (!has_address_) {
    client->on_upstream_error(UpstreamError::CONNECT_REFUSED, Delivery::NOT_DELIVERED);
    return false;
  }
  int fd = connect_nonblocking(address_);
  if (fd < 0) {
    if (errno == EAGAIN && total_ > 0 && cluster_.queue_timeout > 0) {
      // A unix socket's listen backlog is full: the upstream is at capacity, not gone. Wait
      // for one of our connections to come back (or the queue timeout) rather than fail.
      enqueue(client, from_queue);
      return false;
    }
    refuse(client);
    return false;
  }
  ++connects_;
  ++total_;
  publish();
  auto* u = new Http1UpstreamConnection(*this, fd);
  u->attach(client, client->is_head_request());
  client->on_upstream_ready(*u);
  return true;
}

void UpstreamPool::set_address(const SocketAddress& a) {
  address_ = a;
  has_address_ = true;
  serve_waiters();
}

void UpstreamPool::address_failed() {
  if (has_address_)
    return; // keep using the last good answer
  while (UpstreamStreamListener* c = wait_.front()) {
    cancel(c);
    metrics_.errors[static_cast<int>(UpstreamError::CONNECT_REFUSED)].inc();
    c->on_upstream_error(UpstreamError::CONNECT_REFUSED, Delivery::NOT_DELIVERED);
  }
}

void UpstreamPool::cancel(UpstreamStreamListener* client) {
  if (!client->queued)
    return;
  client->queued = false;
  wait_.erase(client);
  --waiting_;
  publish();
}

void UpstreamPool::release(Http1UpstreamConnection* u, bool reusable, double keepalive_hint) {
  if (!reusable) {
    u->close();
    return;
  }
  if (wait_.front()) {
    // Straight to a waiting request, without a pass through the idle watcher: bytes after the
    // response's end, or its close, may already be here.
    if (!u->quiet()) {
      u->close(); // on_closed serves the waiter with a fresh connection
      return;
    }
    UpstreamStreamListener* c = wait_.front();
    cancel(c);
    ++reuses_;
    u->attach(c, c->is_head_request());
    c->on_upstream_ready(*u);
    return;
  }
  u->idle_since = ev_now(loop_);
  u->idle_until = u->idle_since + retire_after(keepalive_hint);
  if (idle_count_ >= static_cast<size_t>(cluster_.max_idle_per_endpoint)) {
    u->close();
    return;
  }
  push_idle(u);
}

double UpstreamPool::retire_after(double keepalive_hint) const {
  double idle = cluster_.idle_timeout > 0 ? cluster_.idle_timeout : kDefaultIdle;
  if (keepalive_hint > 0)
    idle = std::min(idle, std::max(0.1, keepalive_hint - kIdleMargin));
  if (learned_idle_ > 0)
    idle = std::min(idle, std::max(0.1, learned_idle_ * kLearnedFraction));
  return idle;
}

void UpstreamPool::note_idle_closed(double idle_seconds) {
  if (idle_seconds < kMinLearnedIdle || (learned_idle_ > 0 && idle_seconds >= learned_idle_))
    return;
  learned_idle_ = idle_seconds;
  // The connections idle now go by it too.
  double limit = std::max(0.1, learned_idle_ * kLearnedFraction);
  for (Http1UpstreamConnection* u = idle_.front(); u; u = IdleList::next(u))
    u->idle_until = std::min(u->idle_until, u->idle_since + limit);
  ev_timer_stop(loop_, &idle_timer_);
  arm_idle_timer();
}

void UpstreamPool::on_closed(Http1UpstreamConnection* u) {
  unlink_idle(u);
  --total_;
  publish();
  destroy_later(u);
  serve_waiters();
}

void UpstreamPool::destroy_later(Http1UpstreamConnection* u) {
  doomed_.push_back(u);
  deferred_.add(&reaper_);
}

void UpstreamPool::Reaper::run_deferred() {
  std::vector<Http1UpstreamConnection*> doomed;
  doomed.swap(pool->doomed_);
  for (Http1UpstreamConnection* u : doomed)
    delete u;
  std::vector<Http2UpstreamConnection*> h2_doomed;
  h2_doomed.swap(pool->h2_doomed_);
  for (Http2UpstreamConnection* c : h2_doomed)
    delete c;
}

Http2UpstreamConnection* UpstreamPool::h2_with_room() {
  // The connection with the fewest streams: with h2_connections > 1, requests spread over
  // that many connections (and so over that many of a preforked upstream's workers).
  Http2UpstreamConnection* best = nullptr;
  size_t open = 0;
  for (Http2UpstreamConnection* c = h2_conns_.front(); c; c = H2List::next(c)) {
    open += c->state() != Http2UpstreamConnection::State::DRAINING;
    if (c->can_take() && (!best || c->streams() < best->streams()))
      best = c;
  }
  if (best && best->streams() > 0 && open < static_cast<size_t>(cluster_.h2_connections))
    return nullptr; // open another first
  return best;
}

bool UpstreamPool::h2_connect() {
  if (!has_address_ || (max_ > 0 && total_ >= max_))
    return false;
  int fd = connect_nonblocking(address_);
  if (fd < 0)
    return false;
  ++connects_;
  ++total_;
  auto* c = new Http2UpstreamConnection(*this, fd);
  h2_conns_.push_front(c);
  publish();
  return true;
}

void UpstreamPool::acquire_h2(UpstreamStreamListener* client) {
  if (Http2UpstreamConnection* c = h2_with_room()) {
    ++reuses_;
    c->open_stream(client);
    return;
  }
  if (has_address_ && (max_ == 0 || total_ < max_)) {
    if (!h2_connect()) {
      refuse(client);
      return;
    }
    h2_conns_.front()->open_stream(client);
    return;
  }
  wait_for_room(client);
}

void UpstreamPool::h2_stream_opened() {
  ++h2_streams_;
  publish();
}

void UpstreamPool::h2_stream_done() {
  --h2_streams_;
  publish();
  h2_serve_waiters();
}

void UpstreamPool::h2_serve_waiters() {
  while (wait_.front() && has_address_) {
    Http2UpstreamConnection* c = h2_with_room();
    if (!c) {
      if (!h2_connect())
        return;
      c = h2_conns_.front();
    }
    UpstreamStreamListener* w = wait_.front();
    cancel(w);
    c->open_stream(w);
  }
}

void UpstreamPool::h2_closed(Http2UpstreamConnection* c) {
  h2_conns_.erase(c);
  --total_;
  h2_streams_ -= std::min(h2_streams_, c->streams());
  publish();
  h2_doomed_.push_back(c);
  deferred_.add(&reaper_);
}

void UpstreamPool::serve_waiters() {
  if (h2_) {
    h2_serve_waiters();
    return;
  }
  while (has_address_ && wait_.front() && (max_ == 0 || total_ < max_)) {
    UpstreamStreamListener* c = wait_.front();
    cancel(c);
    if (!connect_for(c, true) && c == wait_.front())
      return; // the backlog is still full: c is back at the head, waiting
  }
}

void UpstreamPool::note_connect_failed() {
  ++connect_failures_;
  down_until_ = ev_now(loop_) + cluster_.fail_timeout;
  gauges_.connect_failures.set(connect_failures_);
  gauges_.down_until.set(static_cast<int64_t>(down_until_));
}

void UpstreamPool::note_connected() {
  if (connect_failures_ == 0)
    return;
  connect_failures_ = 0;
  gauges_.connect_failures.set(0);
}

void UpstreamPool::publish() {
  if (h2_) {
    // An h2c connection is busy while it carries a stream.
    idle_count_ = 0;
    for (Http2UpstreamConnection* c = h2_conns_.front(); c; c = H2List::next(c))
      idle_count_ += c->streams() == 0;
  }
  gauges_.idle.set(static_cast<int64_t>(idle_count_));
  gauges_.busy.set(static_cast<int64_t>(total_ - idle_count_));
  gauges_.waiting.set(static_cast<int64_t>(waiting_));
}

void UpstreamPool::push_idle(Http1UpstreamConnection* u) {
  idle_.push_front(u);
  ++idle_count_;
  publish();
  arm_idle_timer();
}

void UpstreamPool::unlink_idle(Http1UpstreamConnection* u) {
  if (!idle_.erase(u))
    return; // not in the list
  --idle_count_;
  publish();
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
    UpstreamStreamListener* c = wait_.front();
    cancel(c);
    if (!has_address_) {
      // Still no answer from the resolver: a gateway timeout, not a full queue.
      metrics_.errors[static_cast<int>(UpstreamError::CONNECT_TIMEOUT)].inc();
      c->on_upstream_error(UpstreamError::CONNECT_TIMEOUT, Delivery::NOT_DELIVERED);
      continue;
    }
    metrics_.errors[metrics::kErrorQueueTimeout].inc();
    c->on_queue_timeout();
  }
  arm_queue_timer();
}

void UpstreamPool::arm_idle_timer() {
  if (ev_is_active(&idle_timer_) || !idle_.back())
    return;
  // The oldest idle connection (the tail) expires first only roughly (hints differ); the
  // timer callback scans the whole list, which is short.
  double due = idle_.back()->idle_until - ev_now(loop_);
  ev_timer_set(&idle_timer_, std::max(0.05, due), 0);
  ev_timer_start(loop_, &idle_timer_);
}

void UpstreamPool::idle_timer_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<UpstreamPool*>(w->data)->on_idle_timer();
}

void UpstreamPool::on_idle_timer() {
  double now = ev_now(loop_);
  double next = 0;
  for (Http1UpstreamConnection* u = idle_.front(); u;) {
    Http1UpstreamConnection* n = IdleList::next(u);
    if (u->idle_until <= now) {
      unlink_idle(u);
      u->close();
    } else if (next == 0 || u->idle_until < next) {
      next = u->idle_until;
    }
    u = n;
  }
  if (next > 0) {
    ev_timer_set(&idle_timer_, std::max(0.05, next - now), 0);
    ev_timer_start(loop_, &idle_timer_);
  }
}

} // namespace portico::upstream
