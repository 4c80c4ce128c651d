#include "routing/hedge.h"

#include "routing/proxied_exchange.h"
#include "upstream/cluster.h"

namespace portico::routing {

Hedge::Hedge(ProxiedExchange& ex, struct ev_loop* loop, double delay) : ex_(ex), loop_(loop) {
  ev_timer_init(&timer_, timer_cb, delay, 0);
  timer_.data = this;
  ev_timer_start(loop_, &timer_);
}

void Hedge::timer_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<Hedge*>(w->data)->send();
}

void Hedge::send() {
  ProxiedExchange& x = ex_;
  // Only while the first try still waits for its head and the proxy holds the whole request
  // (so that the hedge sends exactly what the first try did).
  if (x.state_ != ProxiedExchange::State::REQUEST || !x.up_ || !x.request_ended_ || !x.replayable_)
    return;
  upstream::UpstreamPool* other = x.cluster_->pick_other(*x.pool_);
  if (!other || !x.retry_allowed())
    return; // one endpoint usable, or the retry budget or breaker is full
  ++x.retries_;
  pool_ = other;
  pool_->hold();
  pool_->acquire(this, false);
}

void Hedge::cancel() {
  ev_timer_stop(loop_, &timer_);
  if (!pool_)
    return;
  if (queued)
    pool_->cancel(this);
  if (up_) {
    up_->detach(); // reset (h2c) or closed (HTTP/1.1): its answer is no longer wanted
    up_ = nullptr;
  }
  ex_.cluster_->metrics().hedges[static_cast<size_t>(metrics::HedgeOutcome::LOST)].inc();
  pool_->release();
  pool_ = nullptr;
}

void Hedge::failed() {
  up_ = nullptr;
  ex_.cluster_->metrics().hedges[static_cast<size_t>(metrics::HedgeOutcome::FAILED)].inc();
  pool_->release();
  pool_ = nullptr;
}

void Hedge::on_upstream_ready(upstream::UpstreamStream& up) {
  up_ = &up;
  ProxiedExchange& x = ex_;
  up.send_head(x.ex_.request(), x.framing_, x.client_origin_, *x.ctx_.fwd);
  x.replay_.for_each_run([&](std::string_view run) { up.send_body(run); });
  up.end_request(x.request_trailers_);
}

void Hedge::on_upstream_head(const http::UpstreamResponseHead& head) {
  won_ = true;
  ex_.cluster_->metrics().hedges[static_cast<size_t>(metrics::HedgeOutcome::WON)].inc();
  ex_.hedge_won(*this);
  ex_.on_upstream_head(head);
}

// Once it has won, the exchange's stream: what it hears goes there.
void Hedge::on_upstream_body(std::string_view data) {
  ex_.on_upstream_body(data);
}
void Hedge::on_upstream_trailer(std::string_view name, std::string_view value) {
  ex_.on_upstream_trailer(name, value);
}
void Hedge::on_upstream_end() {
  ex_.on_upstream_end();
}
void Hedge::on_upstream_writable() {
  if (won_)
    ex_.on_upstream_writable();
}

void Hedge::on_upstream_error(upstream::UpstreamError e, upstream::Delivery delivery) {
  if (won_) {
    ex_.on_upstream_error(e, delivery);
    return;
  }
  if (e != upstream::UpstreamError::LOCAL_RESOURCES)
    ex_.cluster_->outcome(*pool_, 0);
  failed();
  ex_.hedge_failed(e, delivery);
}

void Hedge::on_queue_timeout() {
  failed();
  ex_.hedge_failed(upstream::UpstreamError::CONNECT_TIMEOUT, upstream::Delivery::NOT_DELIVERED);
}

bool Hedge::is_head_request() const {
  return ex_.is_head_request(); // false once the client went: its request is gone
}

} // namespace portico::routing
