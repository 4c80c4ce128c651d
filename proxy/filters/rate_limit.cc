// A route's `rate_limit`: each request is counted under its key (http/request_key.h) by each of
// the route's limits, in the table the workers share (limits/gcra_table.h: GCRA, nginx's
// limit_req in one compare-and-swap). Within the rate it passes; within the burst it passes at
// once (nodelay, or among the first `delay`) or waits its turn on a timer; past the burst it is
// answered 429 (or `status`) with Retry-After and the RateLimit and RateLimit-Policy fields of
// the IETF httpapi draft. A shared limit (`shared`) is counted in Redis for every instance,
// through the worker's allowance of it (limits/shared_limiter.h); a request waits for Redis
// only when that allowance is empty. A dry run only counts. Runs before every other filter: a
// refused request costs no cache lookup, no upstream.
#include "core/monotonic_clock.h"
#include "filters/rate_limit_settings.h"
#include "filters/route_factory.h"
#include "routing/filter.h"

#include <cmath>
#include <ev.h>
#include <memory>
#include <vector>

namespace portico::filters {

namespace {

using routing::FilterStatus;

int64_t seconds_up(int64_t ns) {
  return std::max<int64_t>(1, (ns + 999'999'999) / 1'000'000'000);
}

using Limiters = std::vector<std::shared_ptr<limits::SharedLimiter>>;

class RateLimitFilter final : public routing::Filter, limits::SharedLimiter::Waiter {
public:
  RateLimitFilter(const RateLimitSettings& s, std::string_view route, const Limiters& limiters)
      : settings_(s), route_(route), limiters_(limiters) {}

private:
  FilterStatus on_request_head(http::RequestHead& req) override {
    req_ = &req;
    return run(0);
  }

  // The limits from i on, each in turn; STOP when one refused, or the request waits (for
  // Redis, or for its turn under the rate).
  FilterStatus run(size_t i) {
    thread_local std::string key;
    std::string_view client = exchange_options().client;
    int64_t now = core::monotonic_ns();
    for (; i < settings_.limits.size(); ++i) {
      const auto& l = settings_.limits[i];
      if (!l.exempt.empty() && core::in_any(l.exempt, client))
        continue;
      if (!http::build_key(l.key, *req_, client, route_, key))
        continue; // no value to count it under (nginx: an empty key is not limited)
      uint64_t hash = std::hash<std::string_view>{}(key);
      if (l.shared) {
        if (i >= limiters_.size() || !limiters_[i]) {
          if (!unchecked(l))
            return FilterStatus::STOP;
          continue;
        }
        auto a = limiters_[i]->take(key, hash, this);
        if (a.verdict == limits::SharedLimiter::Verdict::WAIT) {
          waiting_on_ = i;
          return FilterStatus::STOP;
        }
        if (!decide_shared(l, a))
          return FilterStatus::STOP;
        continue;
      }
      auto d = l.table->take(hash, now, l.interval_ns, l.burst);
      if (d.evicted)
        l.counters->evictions.fetch_add(1, std::memory_order_relaxed);
      if (!d.allowed) {
        if (l.dry_run) {
          l.counters->count(metrics::LimitResult::DRY_RUN);
          show(l, 0, d.ahead_ns); // what a client would be told
          continue;
        }
        l.counters->count(metrics::LimitResult::LIMITED);
        refuse(l, d.ahead_ns);
        return FilterStatus::STOP;
      }
      int64_t late = l.nodelay ? 0 : d.ahead_ns - l.delay * l.interval_ns;
      if (late > 0 && !l.dry_run) {
        l.counters->count(metrics::LimitResult::DELAYED);
        if (late > wait_ns_) {
          wait_ns_ = late;
          exchange_options().limit = exchange().arena().join({l.name, " delayed"});
        }
      } else {
        l.counters->count(metrics::LimitResult::ALLOWED);
      }
      show(l, d.remaining, d.ahead_ns + l.interval_ns);
    }
    if (wait_ns_ <= 0)
      return FilterStatus::CONTINUE;
    // Its turn under the rate: the request waits here, its body held back meanwhile.
    ev_timer_init(&timer_, &RateLimitFilter::on_turn, static_cast<double>(wait_ns_) / 1e9, 0);
    timer_.data = this;
    ev_timer_start(exchange().loop(), &timer_);
    return FilterStatus::STOP;
  }

  // Redis answered for the limit the request waited on: on with the rest.
  void decided(const limits::SharedLimiter::Answer& a) override {
    const auto& l = settings_.limits[waiting_on_];
    if (decide_shared(l, a) && run(waiting_on_ + 1) == FilterStatus::CONTINUE)
      continue_request();
  }

  // False when the request was refused.
  bool decide_shared(const RateLimit& l, const limits::SharedLimiter::Answer& a) {
    using V = limits::SharedLimiter::Verdict;
    if (a.verdict == V::UNCHECKED)
      return unchecked(l);
    if (a.verdict == V::LIMITED) {
      if (l.dry_run) {
        l.counters->count(metrics::LimitResult::DRY_RUN);
        show(l, 0, a.retry_ns);
        return true;
      }
      l.counters->count(metrics::LimitResult::LIMITED);
      refuse(l, a.retry_ns);
      return false;
    }
    l.counters->count(metrics::LimitResult::ALLOWED);
    show(l, a.remaining, l.interval_ns);
    return true;
  }

  // Redis down or late: the limit's failure mode decides. False when the request was refused.
  bool unchecked(const RateLimit& l) {
    l.counters->count(metrics::LimitResult::UNCHECKED);
    if (l.shared->fail_open || l.dry_run) {
      exchange_options().limit = exchange().arena().join({l.name, " unchecked"});
      return true;
    }
    refuse(l, 1'000'000'000, " unchecked");
    return false;
  }

  // The first limit with `headers` is the one every response tells of.
  void show(const RateLimit& l, int64_t remaining, int64_t reset_ns) {
    if (!l.headers || shown_)
      return;
    shown_ = &l;
    remaining_ = remaining;
    reset_ns_ = reset_ns;
  }

  static void on_turn(struct ev_loop*, ev_timer* w, int) {
    static_cast<RateLimitFilter*>(w->data)->continue_request();
  }

  FilterStatus on_response_head(routing::FilterResponseHead& head) override {
    if (shown_ && !refused_)
      add_fields(*shown_, remaining_, reset_ns_, *head.fields);
    return FilterStatus::CONTINUE;
  }

  void on_exchange_close() override {
    if (waiting_on_ < limiters_.size() && limiters_[waiting_on_])
      limiters_[waiting_on_]->cancel(this);
    if (ev_is_active(&timer_))
      ev_timer_stop(exchange().loop(), &timer_);
  }

  // RateLimit-Policy: "NAME";q=QUOTA;w=WINDOW and RateLimit: "NAME";r=REMAINING;t=RESET
  // (draft-ietf-httpapi-ratelimit-headers), in the exchange's arena.
  void add_fields(const RateLimit& l, int64_t remaining, int64_t reset_ns,
                  std::vector<http::Header>& out) {
    auto& arena = exchange().arena();
    char q[24], w[24], r[24], t[24];
    std::snprintf(q, sizeof q, "%lld", static_cast<long long>(l.per_window));
    std::snprintf(w, sizeof w, "%lld", static_cast<long long>(l.window_s));
    std::snprintf(r, sizeof r, "%lld", static_cast<long long>(remaining));
    std::snprintf(t, sizeof t, "%lld", static_cast<long long>(seconds_up(reset_ns)));
    out.push_back({"ratelimit-policy", arena.join({"\"", l.name, "\";q=", q, ";w=", w})});
    out.push_back({"ratelimit", arena.join({"\"", l.name, "\";r=", r, ";t=", t})});
  }

  // Answers the limit's status; Retry-After says when one would be let through (ahead_ns).
  void refuse(const RateLimit& l, int64_t ahead_ns, std::string_view why = {}) {
    thread_local std::vector<http::Header> fields;
    fields.clear();
    char after[24];
    std::snprintf(after, sizeof after, "%lld", static_cast<long long>(seconds_up(ahead_ns)));
    fields.push_back({"retry-after", exchange().arena().join({after})});
    add_fields(l, 0, ahead_ns, fields);
    char status[8];
    std::snprintf(status, sizeof status, " %d", l.status);
    exchange_options().limit = exchange().arena().join({l.name, status, why});
    refused_ = true;
    respond(routing::LocalReply{l.status,
                                "text/plain",
                                l.status == 429 ? "Too Many Requests\n" : "Limited\n",
                                {fields.data(), fields.size()}});
  }

  const RateLimitSettings& settings_;
  std::string_view route_;
  const Limiters& limiters_;
  http::RequestHead* req_ = nullptr;
  size_t waiting_on_ = 0; // the shared limit whose answer the request waits for
  int64_t wait_ns_ = 0;   // the longest turn a limit without nodelay asks it to wait
  ev_timer timer_{};
  const RateLimit* shown_ = nullptr; // the limit whose fields every response carries
  bool refused_ = false;
  int64_t remaining_ = 0, reset_ns_ = 0;
};

class RateLimitFactory final : public routing::FilterFactory {
public:
  RateLimitFactory(const RateLimitSettings& s, const config::RouteConfig& r)
      : settings_(s), route_(r.label) {}
  routing::Filter* create(const server::Exchange&) const override {
    return new RateLimitFilter(settings_, route_, limiters_);
  }
  // The worker's side of each shared limit, connected to its Redis from this loop.
  void start(struct ev_loop* loop) override {
    limiters_.clear();
    for (const auto& l : settings_.limits)
      limiters_.push_back(l.shared ? std::make_shared<limits::SharedLimiter>(
                                         loop, *l.shared, l.interval_ns, l.burst, l.counters)
                                   : nullptr);
  }

private:
  const RateLimitSettings& settings_;
  std::string_view route_;
  Limiters limiters_; // by the limit's index; null for a local one
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_rate_limit(const config::RouteConfig* r,
                                                        metrics::WorkerMetrics&) {
  const auto* s = r ? r->settings_for<RateLimitSettings>("rate_limit") : nullptr;
  if (!s)
    return nullptr;
  return std::make_unique<RateLimitFactory>(*s, *r);
}

} // namespace portico::filters
