// A failed try made again: which failures may be (routing/retry_policy.h says what is safe),
// how often, after how long and how many at once ([[cluster]] retry and circuit_breakers).
// Envoy's model: a retry budget bounds retries to a share of the cluster's requests in flight,
// so that an endpoint failing half its requests does not see its load grow by half; each
// retry waits a jittered, growing backoff unless nothing of the request reached the
// application; a try may be cut at per_try_timeout and made again elsewhere.
#include "routing/proxied_exchange.h"
#include "upstream/cluster.h"

#include <algorithm>

namespace portico::routing {

namespace {

int status_for(upstream::UpstreamError e) {
  switch (e) {
  case upstream::UpstreamError::CONNECT_TIMEOUT:
  case upstream::UpstreamError::RESPONSE_TIMEOUT:
  case upstream::UpstreamError::SEND_TIMEOUT: return 504;
  case upstream::UpstreamError::LOCAL_RESOURCES: return 503;
  default: return 502;
  }
}

constexpr std::string_view kBreakerFull = "breaker max_retries";
constexpr std::string_view kBudgetFull = "retry budget";

} // namespace

RetryPolicy ProxiedExchange::retry_policy() const {
  const auto& cfg = cluster_->config();
  return {options_.retry_on_reset >= 0 ? options_.retry_on_reset == 1 : cfg.retry_on_reset,
          options_.retry_non_idempotent >= 0 ? options_.retry_non_idempotent == 1
                                             : cfg.retry_non_idempotent};
}

void ProxiedExchange::try_failed(upstream::UpstreamError e, upstream::Delivery delivery,
                                 const char* what) {
  stop_timer();
  std::optional<RetryReason> why =
      retries_ < cluster_->config().retry.retries
          ? retry_reason(retry_policy(), e, delivery, ex_.request().method, replayable_)
          : std::nullopt;
  // A connect that failed goes to another endpoint (this one is now held down), as nginx's
  // proxy_next_upstream error does; with no other endpoint, trying again now is pointless.
  upstream::UpstreamPool* next = why ? &pick() : nullptr;
  if (!why || (why == RetryReason::CONNECT_FAILED && next == pool_)) {
    log_failure(status_for(e), what);
    fail(status_for(e));
    return;
  }
  if (!retry_allowed()) {
    // Envoy's retry overflow: the error stands, the retry is not made.
    log_failure(status_for(e), options_.limit == kBudgetFull ? "retry budget: not retried"
                                                             : "breaker max_retries: not retried");
    fail(status_for(e));
    return;
  }
  retry(*why, next);
}

bool ProxiedExchange::retry_status(int status) {
  const auto& rc = cluster_->config().retry;
  if (rc.on_status.empty() || retries_ >= rc.retries || framing_ == upstream::BodyFraming::TUNNEL ||
      std::find(rc.on_status.begin(), rc.on_status.end(), status) == rc.on_status.end())
    return false;
  // The application answered, so it had the request: sent again only when that is safe.
  auto why = resend_reason();
  if (!why || !retry_allowed())
    return false; // the response goes to the client, as Envoy's last try's does
  cluster_->outcome(*pool_, status);
  stop_upstream();
  retry(*why, &pick());
  return true;
}

std::optional<RetryReason> ProxiedExchange::resend_reason() const {
  // As after a reset, whatever retry_on_reset says (on_status and hedging are their own
  // switches): an idempotent method, or retry_non_idempotent, with the whole body held.
  RetryPolicy policy = retry_policy();
  policy.retry_unanswered = true;
  return retry_reason(policy, upstream::UpstreamError::RESET, upstream::Delivery::UNANSWERED,
                      ex_.request().method, replayable_);
}

bool ProxiedExchange::retry_allowed() {
  if (!cluster_->retry_budget_allows(retries_ > 0)) {
    options_.limit = kBudgetFull;
    return false;
  }
  if (!enter(metrics::Breaker::MAX_RETRIES)) {
    options_.limit = kBreakerFull;
    return false;
  }
  return true;
}

void ProxiedExchange::retry(RetryReason why, upstream::UpstreamPool* next) {
  ++retries_;
  set_state(State::WAITING);
  pool_->metrics().errors.retried().inc();
  pool_->metrics().retries[static_cast<size_t>(why)].inc();
  next->hold();
  pool_->release();
  pool_ = next;
  phase_at_ = ev_time();
  // Nothing of the request reached an application: the next endpoint or connection at once.
  // Otherwise a random wait that grows with each retry, so that retries of many requests
  // neither arrive together nor keep a struggling endpoint from recovering.
  double wait = why == RetryReason::CONNECT_FAILED || why == RetryReason::REFUSED_STREAM
                    ? 0
                    : cluster_->backoff(retries_);
  if (wait > 0)
    start_timer(wait);
  else
    acquire(true);
}

void ProxiedExchange::start_timer(double seconds) {
  ev_timer_stop(ex_.loop(), &timer_);
  ev_timer_set(&timer_, seconds, 0);
  ev_timer_start(ex_.loop(), &timer_);
}

void ProxiedExchange::timer_cb(struct ev_loop*, ev_timer* w, int) {
  auto* self = static_cast<ProxiedExchange*>(w->data);
  if (self->state_ == State::WAITING) {
    self->acquire(true); // a retry's backoff is over
    return;
  }
  // The try's per_try_timeout: cut, and judged as an unanswered request (a GET is tried again).
  self->pool_->metrics().errors.per_try_timeout().inc();
  if (self->up_) {
    self->up_->detach();
    self->up_ = nullptr;
  }
  self->cluster_->outcome(*self->pool_, 0);
  self->primary_failed(upstream::UpstreamError::RESPONSE_TIMEOUT, upstream::Delivery::UNANSWERED,
                       "per_try_timeout");
}

void ProxiedExchange::primary_failed(upstream::UpstreamError e, upstream::Delivery delivery,
                                     const char* what) {
  if (hedge_ && hedge_->racing()) {
    stop_timer();
    primary_lost_ = true; // the hedge may still answer; if it fails too, hedge_failed
    return;
  }
  if (hedge_)
    hedge_->cancel(); // armed, not sent: a retry takes its place
  try_failed(e, delivery, what);
}

void ProxiedExchange::maybe_hedge() {
  if (!cluster_->config().hedge.enabled || hedge_ || framing_ == upstream::BodyFraming::TUNNEL)
    return;
  if (!resend_reason())
    return;
  hedge_ = new Hedge(*this, ex_.loop(), cluster_->hedge_delay());
}

void ProxiedExchange::hedge_won(Hedge& h) {
  if (up_) {
    up_->detach(); // the first try, cancelled: an h2c stream reset, a connection closed
    up_ = nullptr;
  }
  stop_timer();
  pool_->release();
  pool_ = h.pool();
  up_ = h.stream();
  h.handed_over();
}

void ProxiedExchange::hedge_failed(upstream::UpstreamError e, upstream::Delivery delivery) {
  if (primary_lost_) // both tries failed: judged as the last one's failure
    try_failed(e, delivery, upstream::to_string(e));
}

} // namespace portico::routing
