#pragma once
// One worker's allowances of a shared limit (limits/shared_limiter.h): for each key, the
// requests Redis granted this worker ahead of time (a lease), so that a request costs no round
// trip while its key has some left. Used on the worker's loop only: no atomics.
//
// Like the GCRA table the table is fixed when made (slots of a key hash, probed kProbe from
// the hash) and never grows, whatever keys come. A slot is free when it holds nothing worth
// keeping: no allowance left (or its lease has expired), nothing asked of Redis, no request
// waiting, no refusal still running. When every probed slot is busy the request has no slot
// (the caller decides it as it decides one Redis did not answer, and counts an eviction).
#include "core/intrusive_list.h"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace portico::limits {

// A request waiting for its key's allowance (a rate limit filter), in its lease's list.
struct LeaseWaiter {
  core::ListHook<LeaseWaiter> hook;
};

struct Lease {
  uint64_t key = 0;             // the key's hash; 0: never used
  int64_t tokens = 0;           // requests this worker may still let through
  int64_t expires_ns = 0;       // unspent tokens are given up then
  int64_t empty_until_ns = 0;   // Redis had none left: refused until then once tokens run out
  const void* asking = nullptr; // the request for more on its way to Redis, if one is
  int32_t misses = 0; // answers in a row that granted nothing: other workers take the rate
  core::IntrusiveList<LeaseWaiter, &LeaseWaiter::hook> waiters; // oldest first

  int64_t usable(int64_t now_ns) const { return now_ns < expires_ns ? tokens : 0; }
  bool busy(int64_t now_ns) const {
    return asking || !waiters.empty() || usable(now_ns) > 0 || now_ns < empty_until_ns;
  }
  // Made key's, holding nothing (a slot is given to a key only when no request waits in it).
  void reset(uint64_t k) {
    key = k;
    tokens = expires_ns = empty_until_ns = 0;
    asking = nullptr;
    misses = 0;
  }
};

class LeaseTable {
public:
  static constexpr size_t kProbe = 8;
  explicit LeaseTable(size_t slots);

  // key's lease, a free slot made key's (evicted: it held an unspent allowance of another
  // key, now given up), or null when every probed slot is busy.
  Lease* find(uint64_t key, int64_t now_ns, bool& evicted);
  // key's lease if it still has one (a reply from Redis finds its lease again this way).
  Lease* existing(uint64_t key);
  size_t slots() const { return mask_ + 1; }

private:
  std::unique_ptr<Lease[]> slots_;
  size_t mask_;
};

} // namespace portico::limits
