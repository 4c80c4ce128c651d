#pragma once
// What each named limit (and forward auth) decided, over the process: a limit's table is shared by
// the workers (limits/gcra_table.h), so are its counts. Found by name when a configuration is read
// (a reload keeps counting where it was), never on a request.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace portico::metrics {

// unchecked: a shared limit's Redis was down or late, and the request was let through (fail
// open) or refused (fail closed) without it.
enum class LimitResult : uint8_t { ALLOWED, DELAYED, LIMITED, DRY_RUN, UNCHECKED };
inline constexpr const char* kLimitResults[] = {"allowed", "delayed", "limited", "dry_run",
                                                "unchecked"};
inline constexpr size_t kLimitResultCount = 5;

struct LimitCounters {
  std::atomic<uint64_t> results[kLimitResultCount] = {};
  std::atomic<uint64_t> evictions{0}; // keys given up while still limited: the table was full
  void count(LimitResult r) {
    results[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
};

// The counters of the limit called name (made the first time); they live as long as the
// process.
LimitCounters& limit_counters(std::string_view name);
// Each limit's name and counters, in name order.
void for_each_limit(const std::function<void(const std::string&, const LimitCounters&)>& f);

// What each named forward auth decided: let through (2xx), denied (its 401, 403 or 3xx passed
// to the client), error (another answer, none in time, or a reset: error_status), cached (let
// through by a 2xx remembered for the same question, without asking).
enum class AuthResult : uint8_t { ALLOWED, DENIED, ERROR, CACHED };
inline constexpr const char* kAuthResults[] = {"allowed", "denied", "error", "cached"};
inline constexpr size_t kAuthResultCount = 4;

struct AuthCounters {
  std::atomic<uint64_t> results[kAuthResultCount] = {};
  void count(AuthResult r) {
    results[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
};

AuthCounters& auth_counters(std::string_view name);
void for_each_auth(const std::function<void(const std::string&, const AuthCounters&)>& f);

// A Redis that shared limits keep their state in (limits/redis_client.h), by its address: the
// workers connected to it, what became of the commands sent (ok: an answer; error: an error
// answer or none, the connection lost; timeout: not answered within the limit's deadline;
// down: not sent, no connection), reconnections tried, and how long answers took.
enum class StoreResult : uint8_t { OK, ERROR, TIMEOUT, DOWN };
inline constexpr const char* kStoreResults[] = {"ok", "error", "timeout", "down"};
inline constexpr size_t kStoreResultCount = 4;
inline constexpr double kStoreBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                           0.025,  0.05,  0.1,    0.25,  1};
inline constexpr size_t kStoreBucketCount = sizeof kStoreBuckets / sizeof kStoreBuckets[0];

struct StoreCounters {
  std::atomic<int64_t> connected{0};
  std::atomic<uint64_t> results[kStoreResultCount] = {};
  std::atomic<uint64_t> reconnects{0};
  std::atomic<uint64_t> buckets[kStoreBucketCount + 1] = {}; // not cumulative; the last: +Inf
  std::atomic<uint64_t> sum_us{0};
  void count(StoreResult r) {
    results[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
  void observe(double seconds);
};

StoreCounters& store_counters(std::string_view address);
void for_each_store(const std::function<void(const std::string&, const StoreCounters&)>& f);

} // namespace portico::metrics
