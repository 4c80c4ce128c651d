#pragma once
// Nanoseconds of CLOCK_MONOTONIC: one clock for every worker thread (ev_now() is each loop's
// own), for what the workers share across threads, such as rate limit tables.
#include <cstdint>
#include <ctime>

namespace portico::core {

inline int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

} // namespace portico::core
