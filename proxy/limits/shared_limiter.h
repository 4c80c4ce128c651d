#pragma once
// One worker's side of a rate limit that N Portico instances enforce as one budget, kept in
// Redis (limits/redis_client.h). The budget is GCRA, as the local limits count it
// (limits/gcra_table.h), run in Redis by a Lua script (shared_limiter.cc) that grants up to
// `batch` requests at once: a worker asks for a batch when a key's allowance runs low and lets
// requests through from it with no round trip (limits/lease_table.h). Only a request that
// finds its key's allowance empty waits for Redis, at most `timeout`.
//
// The error bound: Redis grants, over any period t, at most rate × t + burst + 1 requests to
// all instances together, as one local limit would let through. What a worker holds unspent
// is at most one and a half batches, and is given up a second after it was granted: the count
// let through is below what was granted by at most workers × instances × 1.5 × batch. A
// worker that Redis gave less than it asked for (the key is at its rate) refuses the key's
// requests until a batch could have come back, rather than ask for each.
//
// When Redis is down, late (past `timeout`), or answers what is not the script's reply, the
// requests waiting are decided by the failure mode: let through (open) or refused (closed),
// counted as unchecked. A Redis known to be down is not waited on at all.
#include "limits/lease_table.h"
#include "limits/redis_client.h"
#include "metrics/limit_counters.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace portico::limits {

struct SharedSettings {
  RedisAddress redis;
  double timeout_s = 0.05; // the longest a request waits for Redis
  bool fail_open = true;   // Redis down or late: let through (else refuse)
  int64_t batch = 0;       // requests asked of Redis at once (0: rate × 20 ms, at least 1)
  std::string prefix;      // of every Redis key: "portico:rl:NAME:" by default
  size_t slots = 65536;    // keys whose allowance each worker holds at once
};

class SharedLimiter : public std::enable_shared_from_this<SharedLimiter> {
public:
  enum class Verdict : uint8_t { ALLOWED, LIMITED, UNCHECKED, WAIT };
  struct Answer {
    Verdict verdict = Verdict::ALLOWED;
    int64_t retry_ns = 0;  // LIMITED: until Redis would grant one again
    int64_t remaining = 0; // ALLOWED: what this worker holds still
  };
  // A request waiting on Redis (the rate limit filter): decided() follows once, unless
  // cancel() comes first.
  struct Waiter : LeaseWaiter {
    Lease* lease = nullptr;
    virtual void decided(const Answer& a) = 0;
  };

  // On the worker's thread (FilterFactory::start): for a rate of one per interval_ns and burst.
  SharedLimiter(struct ev_loop* loop, const SharedSettings& s, int64_t interval_ns, int64_t burst,
                metrics::LimitCounters* counters);
  ~SharedLimiter();

  // A request of key (hash: its hash): decided now, or WAIT and w->decided() later.
  Answer take(std::string_view key, uint64_t hash, Waiter* w);
  void cancel(Waiter* w);
  int64_t batch() const { return batch_; }

private:
  class Ask;
  friend class Ask;
  bool ask(Lease& l, std::string_view redis_key, int64_t want);
  void granted(Ask& a, int64_t got, int64_t wait_us);
  void failed(Ask& a, metrics::StoreResult why);
  void serve(Lease& l, const Ask& a);

  struct ev_loop* loop_;
  const SharedSettings& settings_;
  std::shared_ptr<RedisClient> redis_;
  metrics::LimitCounters* counters_;
  int64_t interval_ns_, batch_;
  std::string interval_us_, cap_us_; // the script's arguments
  LeaseTable leases_;
};

} // namespace portico::limits
