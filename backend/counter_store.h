#pragma once
// Where the counter app keeps its counts: shared memory made by the master (default) or
// memcached. Every worker increments through one of these.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace portico::backend {

class CounterStore {
public:
  virtual ~CounterStore() = default;
  // Adds one to counter `key` (created at 0 when absent) and returns the new value, or nullopt
  // with *error set: the caller answers 503 rather than a wrong number.
  virtual std::optional<uint64_t> increment(std::string_view key, std::string* error) = 0;
};

} // namespace portico::backend
