#pragma once
// Rates for many keys at once, shared by the workers without a lock: GCRA (the generic cell
// rate algorithm, as redis-cell and Envoy's local limits use it), whose whole state per key is
// one time, the theoretical arrival time (TAT) of the next request. A request at now is let
// through when max(TAT, now) + T - now <= (burst + 1) × T, with T = 1/rate; then TAT moves
// on by T. That is nginx's limit_req (a leaky bucket of burst + 1 requests draining at rate)
// in one compare-and-swap.
//
// The table is fixed when made: slots of a key hash and a TAT, found by probing kProbe slots
// from the hash. Its memory never grows, whatever keys come (a flood of spoofed header values
// included). A key whose TAT has passed holds no state (a full bucket is what a new key gets),
// so its slot is free for another; only when every probed slot belongs to a key still limited
// is one of those given up (the one nearest to passing), and that key starts afresh: the table
// is exact while the keys being limited at once fit in it, and counts each time it was not
// (evictions). Two keys with the same 64-bit hash share a rate. A key and its time are two
// words: while a slot changes hands (a key's bucket refilled, or an eviction) a request of the
// old key racing the new one's first may be counted in the other's bucket, one request once.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace portico::limits {

class GcraTable {
public:
  static constexpr size_t kProbe = 8;

  // At least slots slots (a power of two).
  explicit GcraTable(size_t slots);
  // The table of the limit called name, as the last configuration read made it when it has
  // as many slots (a reload keeps what clients have spent), else a new one. When a
  // configuration is read, never on a request.
  static std::shared_ptr<GcraTable> named(const std::string& name, size_t slots);

  struct Decision {
    bool allowed = false;
    // Allowed: how far ahead of the rate this request is (0 when it conforms), which a limit
    // without nodelay waits out. Refused: how long until one would be let through.
    int64_t ahead_ns = 0;
    int64_t remaining = 0; // requests that may follow at once
    bool evicted = false;  // a key still limited gave way to this one (the table is full)
  };
  // A request of key (a hash) at now_ns, for a rate of one per interval_ns with burst more.
  Decision take(uint64_t key, int64_t now_ns, int64_t interval_ns, int64_t burst);

  size_t slots() const { return mask_ + 1; }
  // The slots a table asked for slots has: a power of two, at least kProbe.
  static size_t slots_for(size_t slots) { return std::bit_ceil(std::max(slots, kProbe)); }

private:
  struct alignas(16) Slot {
    std::atomic<uint64_t> key{0}; // 0: never used
    std::atomic<int64_t> tat{0};
  };
  Slot& slot_for(uint64_t key, int64_t now_ns, bool& evicted);
  std::unique_ptr<Slot[]> slots_;
  size_t mask_;
};

} // namespace portico::limits
