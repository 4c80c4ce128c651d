#pragma once
// One route's requests in one worker, by listener, client protocol, exact status code and who
// gave the answer (the upstream, or Portico itself: a 502, 503, 504, 404 for no route). The
// combinations that occur are few, so they are counted in a small fixed table, not in arrays of
// every possible one: the worker claims a slot the first time a combination occurs and publishes
// its key with a release store; the admin thread reads keys with acquire loads. Past kSlots
// distinct combinations, the rest are counted together as "other". No lock, no allocation.
#include "core/counter.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace portico::metrics {

enum class Protocol : uint8_t;

enum class AnsweredBy : uint8_t {
  UPSTREAM, // the upstream's response (even one cut short)
  PROXY,    // Portico's own: 502/503/504, 404 for no route, 400s before any upstream
  NONE,     // the client went away before any answer: counted as code 499, like nginx
};
const char* to_string(AnsweredBy a);

class RequestCounts {
public:
  static constexpr size_t kSlots = 64;

  void inc(uint16_t listener, Protocol protocol, int status, AnsweredBy by);

  // f(listener, protocol, status, by, count) for every combination counted; then
  // f(0, protocol 0, 0, NONE, count) for the overflow, when there was any.
  template <typename F> void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (uint32_t k = s.key.load(std::memory_order_acquire))
        f(static_cast<uint16_t>((k - 1) >> 14), static_cast<Protocol>(((k - 1) >> 12) & 3),
          static_cast<int>((k - 1) & 1023), static_cast<AnsweredBy>(((k - 1) >> 10) & 3),
          s.n.get());
  }
  uint64_t overflow() const { return overflow_.get(); }

private:
  struct Slot {
    std::atomic<uint32_t> key{0}; // 0: free; else 1 + listener<<14 | protocol<<12 | by<<10 | code
    core::Counter n;
  };
  Slot slots_[kSlots];
  core::Counter overflow_;
};

} // namespace portico::metrics
