#pragma once
// Where the counter app keeps its counts: shared memory made by the master (default) or
// memcached. Every worker increments through one of these. The interface is asynchronous so
// that a store across the network never blocks the worker's loop: the answer comes to a
// CounterWaiter, at once (shared memory) or from the loop later (memcached).
#include "core/expected.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace portico::backend {

class CounterWaiter {
public:
  // The new value, or why there is none: the app answers 503 rather than a wrong number.
  virtual void on_counter(core::expected<uint64_t, std::string> value) = 0;

protected:
  ~CounterWaiter() = default;
};

class CounterStore {
public:
  virtual ~CounterStore() = default;
  // Adds one to counter `key` (created at 0 when absent); waiter hears the result, maybe before
  // this returns.
  virtual void increment(std::string_view key, CounterWaiter* waiter) = 0;
  // The waiter is going away: it hears nothing more.
  virtual void cancel(CounterWaiter* waiter) {}
};

} // namespace portico::backend
