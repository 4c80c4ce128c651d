#pragma once
// Latency histograms written by one worker thread and read by the admin thread at scrape
// time: plain stores of relaxed atomics (no locked instruction on the request path), merged
// across workers only when someone asks.
#include "core/histogram_bounds.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace portico::metrics {

using core::log_spaced_bounds;

class Histogram {
public:
  static constexpr size_t kMaxBuckets = core::kMaxHistogramBuckets;

  // bounds must outlive the histogram and hold at most kMaxBuckets values; none means
  // recording is off and observe() does nothing.
  explicit Histogram(const std::vector<double>* bounds) : bounds_(bounds) {}
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Owner thread only.
  void observe(double seconds);

  // Any thread: adds this histogram's counts (per bucket, not cumulative; the last one is
  // +Inf) to the sums given.
  void add_to(std::vector<uint64_t>& buckets, uint64_t& count, double& sum) const;
  const std::vector<double>& bounds() const { return *bounds_; }

private:
  static void bump(std::atomic<uint64_t>& a, uint64_t by) {
    a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  const std::vector<double>* bounds_;
  std::array<std::atomic<uint64_t>, kMaxBuckets + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_ns_{0};
};

} // namespace portico::metrics
