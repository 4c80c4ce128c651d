#pragma once
// portico-backend's request metrics in shared memory: a table of worker slots in an anonymous
// MAP_SHARED mapping, made by the master before it forks. Each live worker owns one slot and
// writes only that one, with relaxed loads and stores (no lock, no locked instruction); the
// master sums the slots when /metrics is scraped.
//
// A slot outlives its worker: when the master has reaped a worker, the next worker it forks may
// be given the same slot and counts on from where the last one stopped, so the sums never go
// down. Slots are handed out lowest first, so the table only touches as many pages as workers
// were ever alive at once.
#include "core/counter.h"
#include "metrics/histogram.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace portico::backend {

// The apps the router dispatches to: the `app` label's fixed set (never request data).
enum class App : uint8_t {
  HELLO,     // / and /hello
  COUNTER,   // /counter?id=K and /?id=K
  ECHO,      // /echo
  STATUS,    // /status/NNN
  DELAY,     // /delay?ms=N
  BYTES,     // /bytes?n=N
  HEADERS,   // /headers
  STATIC,    // a path under --document-root
  NOT_FOUND, // anything else without --document-root
  COUNT,
};
inline constexpr size_t kAppCount = static_cast<size_t>(App::COUNT);
const char* to_string(App a);

inline constexpr size_t kStatusClasses = 5; // 1xx..5xx
inline constexpr const char* kStatusClassNames[kStatusClasses] = {"1xx", "2xx", "3xx", "4xx",
                                                                  "5xx"};
// 0 for 1xx ... 4 for 5xx. Anything else (0: no response, the client went away first) counts
// as 4xx, like nginx's 499 and the proxy's requests counter.
inline size_t status_class(int status) {
  return status >= 100 && status < 600 ? static_cast<size_t>(status / 100 - 1) : 3;
}

// One app's counts in one worker slot.
struct AppStats {
  // Not explicit: a WorkerSlot initialises its array from the bounds pointer alone.
  AppStats(const std::vector<double>* bounds) : duration(bounds) {} // NOLINT
  core::Counter requests[kStatusClasses];
  metrics::Histogram duration; // seconds, the app handed the request to the exchange's end
};

class alignas(64) WorkerSlot {
public:
  explicit WorkerSlot(const std::vector<double>* bounds)
      : WorkerSlot(bounds, std::make_index_sequence<kAppCount>{}) {}
  WorkerSlot(const WorkerSlot&) = delete;
  WorkerSlot& operator=(const WorkerSlot&) = delete;

  // The owning worker only.
  AppStats& app(App a) { return apps_[static_cast<size_t>(a)]; }
  void set_in_flight(int64_t n) { in_flight_.store(n, std::memory_order_relaxed); }

  // Anyone.
  const AppStats& app(App a) const { return apps_[static_cast<size_t>(a)]; }
  int64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

private:
  friend class BackendMetrics;
  template <size_t... I>
  WorkerSlot(const std::vector<double>* bounds, std::index_sequence<I...>)
      : apps_{((void)I, bounds)...} {}

  std::atomic<int64_t> in_flight_{0}; // requests the worker's apps hold right now
  AppStats apps_[kAppCount];
};

class BackendMetrics {
public:
  // Room for this many workers alive at once, whatever the signals ask for.
  static size_t capacity_for(int workers) {
    return std::max<size_t>(256, 4 * static_cast<size_t>(workers));
  }

  // Maps the table; call in the master, before fork. The bounds are the histograms' upper
  // bounds in seconds; they live in the master's memory, which every forked worker copies.
  explicit BackendMetrics(size_t slots, std::vector<double> bounds = core::default_bounds());
  ~BackendMetrics();
  BackendMetrics(const BackendMetrics&) = delete;
  BackendMetrics& operator=(const BackendMetrics&) = delete;

  bool ok() const { return slots_ != nullptr; }
  size_t capacity() const { return count_; }
  const std::vector<double>& bounds() const { return bounds_; }

  // Master: the lowest free slot, for a worker about to be forked; -1 when every slot has a
  // live worker.
  int acquire();
  // Master: slot i's worker has been reaped. Its counts stay for the next worker given the
  // slot; its in-flight level, which a killed worker may have left above 0, is cleared (no one
  // writes the slot now).
  void release(int i);
  size_t in_use() const { return in_use_; }

  WorkerSlot& slot(int i) { return slots_[i]; }
  const WorkerSlot& slot(int i) const { return slots_[i]; }

  // Master, at scrape time: one app's counts summed over every slot ever used, live or not.
  struct AppTotals {
    uint64_t requests[kStatusClasses] = {};
    std::vector<uint64_t> buckets; // per bucket, not cumulative; the last one is +Inf
    uint64_t count = 0;
    double sum = 0;
  };
  AppTotals totals(App a) const;
  // Master: requests slot i's workers answered (every app and class), for each slot ever used:
  // how the load spread over the workers (with no restarts, a slot is a worker).
  std::vector<uint64_t> requests_by_slot() const;

private:
  WorkerSlot* slots_ = nullptr;
  size_t count_ = 0;
  std::vector<double> bounds_;
  std::vector<bool> used_; // master's bookkeeping, not shared
  size_t in_use_ = 0;
  size_t ever_used_ = 0; // slots [0, ever_used_) may hold counts
};

} // namespace portico::backend
