#include "limits/shared_limiter.h"
#include "core/monotonic_clock.h"

#include <hiredis/hiredis.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace portico::limits {

namespace {

// GCRA over batches: KEYS[1] holds the key's TAT (theoretical arrival time, µs of Redis' own
// clock, so that every instance counts by one clock). Up to ARGV[3] requests are granted at
// once, as many as fit under the cap (burst + 1 intervals ahead of now); the reply is
// {granted, µs until one more would be}. The key expires when its bucket would be full again.
constexpr const char kScript[] = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local cap = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local got = math.floor((now + cap - tat) / interval)
if got > want then got = want end
if got < 0 then got = 0 end
if got > 0 then
  tat = tat + got * interval
  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
end
return {got, math.ceil(tat + interval - cap - now)}
)lua";

constexpr int64_t kLeaseNs = 1'000'000'000; // unspent allowance is given up after this

const std::string& script_sha() {
  static const std::string sha = [] {
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(kScript), sizeof kScript - 1, md);
    std::string hex;
    for (unsigned char c : md) {
      hex += "0123456789abcdef"[c >> 4];
      hex += "0123456789abcdef"[c & 15];
    }
    return hex;
  }();
  return sha;
}

} // namespace

// One batch asked of Redis for one key. It lives until Redis answers (or the connection goes),
// even when its deadline has passed or its limiter is gone: hiredis holds it until then.
class SharedLimiter::Ask final : public RedisReplyHandler {
public:
  Ask(std::weak_ptr<SharedLimiter> owner, struct ev_loop* loop, uint64_t key, std::string redis_key,
      int64_t want)
      : owner_(std::move(owner)), loop_(loop), key(key), redis_key(std::move(redis_key)),
        want(want) {
    ev_init(&deadline_, on_deadline);
    deadline_.data = this;
  }
  ~Ask() override { ev_timer_stop(loop_, &deadline_); }

  bool send(RedisClient& redis, const SharedLimiter& l, bool with_script) {
    std::string want_text = std::to_string(want);
    const std::string& body = with_script ? std::string(kScript) : script_sha();
    const char* argv[] = {with_script ? "EVAL" : "EVALSHA",
                          body.c_str(),
                          "1",
                          redis_key.c_str(),
                          l.interval_us_.c_str(),
                          l.cap_us_.c_str(),
                          want_text.c_str()};
    size_t lengths[7];
    for (int i = 0; i < 7; ++i)
      lengths[i] = i == 3 ? redis_key.size() : std::strlen(argv[i]);
    return redis.call(7, argv, lengths, this);
  }
  void start_deadline(double s) {
    ev_timer_set(&deadline_, s, 0);
    ev_timer_start(loop_, &deadline_);
  }

  void on_redis_reply(redisReply* r) override {
    ev_timer_stop(loop_, &deadline_);
    auto owner = owner_.lock();
    if (owner && r && r->type == REDIS_REPLY_ERROR && !retried_ &&
        std::strncmp(r->str, "NOSCRIPT", 8) == 0) {
      retried_ = true; // this Redis has not seen the script yet (or flushed it): send it
      if (send(*owner->redis_, *owner, true)) {
        if (!timed_out_)
          start_deadline(owner->settings_.timeout_s);
        return;
      }
    }
    if (owner) {
      if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
          r->element[0]->type == REDIS_REPLY_INTEGER &&
          r->element[1]->type == REDIS_REPLY_INTEGER && r->element[0]->integer >= 0 &&
          r->element[0]->integer <= want)
        owner->granted(*this, r->element[0]->integer, r->element[1]->integer);
      else
        owner->failed(*this, metrics::StoreResult::ERROR);
    }
    delete this;
  }

  std::weak_ptr<SharedLimiter> owner_;
  struct ev_loop* loop_;
  uint64_t key;
  std::string redis_key;
  int64_t want;
  bool timed_out_ = false;

private:
  static void on_deadline(struct ev_loop*, ev_timer* w, int) {
    auto* a = static_cast<Ask*>(w->data);
    a->timed_out_ = true;
    if (auto owner = a->owner_.lock())
      owner->failed(*a, metrics::StoreResult::TIMEOUT);
  }
  ev_timer deadline_{};
  bool retried_ = false;
};

SharedLimiter::SharedLimiter(struct ev_loop* loop, const SharedSettings& s, int64_t interval_ns,
                             int64_t burst, metrics::LimitCounters* counters)
    : loop_(loop), settings_(s),
      redis_(RedisClient::of(loop, s.redis, std::max(0.25, 4 * s.timeout_s))), counters_(counters),
      interval_ns_(interval_ns),
      batch_(s.batch > 0
                 ? s.batch
                 : std::clamp<int64_t>(20'000'000 / std::max<int64_t>(interval_ns, 1), 1, 1000)),
      leases_(s.slots) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(interval_ns) / 1000);
  interval_us_ = text;
  std::snprintf(text, sizeof text, "%.3f",
                static_cast<double>(interval_ns) * static_cast<double>(burst + 1) / 1000);
  cap_us_ = text;
}

SharedLimiter::~SharedLimiter() = default;

SharedLimiter::Answer SharedLimiter::take(std::string_view key, uint64_t hash, Waiter* w) {
  int64_t now = core::monotonic_ns();
  bool evicted = false;
  Lease* l = leases_.find(hash, now, evicted);
  if (evicted)
    counters_->evictions.fetch_add(1, std::memory_order_relaxed);
  if (!l)
    return {Verdict::UNCHECKED}; // every slot near it is waiting on Redis: none to wait in
  thread_local std::string redis_key;
  redis_key.assign(settings_.prefix).append(key);
  if (l->usable(now) > 0) {
    --l->tokens;
    // The next batch, before this one runs out; unless Redis just had too little.
    if (l->tokens * 2 < batch_ && !l->asking && now >= l->empty_until_ns)
      ask(*l, redis_key, batch_);
    return {Verdict::ALLOWED, 0, l->tokens};
  }
  if (now < l->empty_until_ns)
    return {Verdict::LIMITED, l->empty_until_ns - now};
  if (!l->asking && !ask(*l, redis_key, batch_))
    return {Verdict::UNCHECKED};
  l->waiters.push_back(w);
  w->lease = l;
  return {Verdict::WAIT};
}

void SharedLimiter::cancel(Waiter* w) {
  if (w->lease)
    w->lease->waiters.erase(w);
  w->lease = nullptr;
}

bool SharedLimiter::ask(Lease& l, std::string_view redis_key, int64_t want) {
  auto* a = new Ask(weak_from_this(), loop_, l.key, std::string(redis_key), want);
  if (!a->send(*redis_, *this, false)) {
    delete a;
    return false;
  }
  a->start_deadline(settings_.timeout_s);
  l.asking = a;
  return true;
}

void SharedLimiter::granted(Ask& a, int64_t got, int64_t wait_us) {
  int64_t now = core::monotonic_ns();
  Lease* l = leases_.existing(a.key);
  if (!l)
    return; // the key's slot went to another key: what Redis granted is not used
  if (l->asking == &a)
    l->asking = nullptr;
  if (got > 0) {
    l->tokens = l->usable(now) + got;
    l->expires_ns = now + kLeaseNs;
  }
  // Redis had less than asked: the key is at its rate. Asking again before a batch could
  // have come back would cost a round trip per request, each for one; and while other workers
  // take what comes back, asking later each time it was none.
  l->misses = got > 0 ? 0 : std::min(l->misses + 1, 4);
  if (got < a.want)
    l->empty_until_ns =
        now + std::max<int64_t>(wait_us, 1) * 1000 + (batch_ * (1 + l->misses) - 1) * interval_ns_;
  serve(*l, a);
}

void SharedLimiter::failed(Ask& a, metrics::StoreResult why) {
  if (why == metrics::StoreResult::TIMEOUT)
    redis_->count(why);
  Lease* l = leases_.existing(a.key);
  if (!l || l->asking != &a)
    return; // a late failure of an ask already given up: its waiters were decided
  l->asking = nullptr;
  std::vector<Waiter*> ready; // decided() may reach here again: no buffer shared with it
  while (LeaseWaiter* w = l->waiters.pop_front())
    ready.push_back(static_cast<Waiter*>(w));
  for (Waiter* w : ready) {
    w->lease = nullptr;
    w->decided({Verdict::UNCHECKED});
  }
}

// Lets l's waiters through while it has allowance, refuses the rest while Redis has none, or
// asks for more for them. Decided after the lease is left as it should be: a waiter's
// decided() may take again.
void SharedLimiter::serve(Lease& l, const Ask& a) {
  int64_t now = core::monotonic_ns();
  std::vector<std::pair<Waiter*, Answer>> ready; // decided() may reach here again
  while (!l.waiters.empty() && l.usable(now) > 0) {
    --l.tokens;
    ready.push_back({static_cast<Waiter*>(l.waiters.pop_front()), {Verdict::ALLOWED, 0, l.tokens}});
  }
  if (!l.waiters.empty() && now < l.empty_until_ns) {
    while (LeaseWaiter* w = l.waiters.pop_front())
      ready.push_back({static_cast<Waiter*>(w), {Verdict::LIMITED, l.empty_until_ns - now}});
  } else if (!l.waiters.empty() && !l.asking &&
             !ask(l, a.redis_key, std::max<int64_t>(batch_, l.waiters.size()))) {
    while (LeaseWaiter* w = l.waiters.pop_front())
      ready.push_back({static_cast<Waiter*>(w), {Verdict::UNCHECKED}});
  }
  for (auto& [w, answer] : ready) {
    w->lease = nullptr;
    w->decided(answer);
  }
}

} // namespace portico::limits
