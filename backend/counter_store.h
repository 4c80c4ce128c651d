#pragma once
// Where the counter app keeps its counts: shared memory made by the master (default) or
// memcached. Every worker increments through one of these.
#include "core/expected.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace portico::backend {

class CounterStore {
public:
  virtual ~CounterStore() = default;
  // Adds one to counter `key` (created at 0 when absent) and returns the new value, or why it
  // could not: the caller answers 503 rather than a wrong number.
  virtual core::expected<uint64_t, std::string> increment(std::string_view key) = 0;
};

} // namespace portico::backend
