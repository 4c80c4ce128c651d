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

enum class LimitResult : uint8_t { ALLOWED, DELAYED, LIMITED, DRY_RUN };
inline constexpr const char* kLimitResults[] = {"allowed", "delayed", "limited", "dry_run"};
inline constexpr size_t kLimitResultCount = 4;

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
// to the client), error (another answer, none in time, or a reset: error_status).
enum class AuthResult : uint8_t { ALLOWED, DENIED, ERROR };
inline constexpr const char* kAuthResults[] = {"allowed", "denied", "error"};
inline constexpr size_t kAuthResultCount = 3;

struct AuthCounters {
  std::atomic<uint64_t> results[kAuthResultCount] = {};
  void count(AuthResult r) {
    results[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
};

AuthCounters& auth_counters(std::string_view name);
void for_each_auth(const std::function<void(const std::string&, const AuthCounters&)>& f);

} // namespace portico::metrics
