#pragma once
// What each named limit decided, over the process: a limit's table is shared by the workers
// (limits/gcra_table.h), so are its counts. Found by name when a configuration is read (a
// reload keeps counting where it was), never on a request.
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

} // namespace portico::metrics
