#pragma once
// Latency histograms written by one worker thread and read by the admin thread at scrape
// time: plain stores of relaxed atomics (no locked instruction on the request path), merged
// across workers only when someone asks.
#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace portico::metrics {

// Upper bounds in seconds, log-spaced from lowest to highest (per_decade bounds per factor of
// 10), rounded to two significant digits so that the `le` labels read well.
std::vector<double> log_spaced_bounds(double lowest = 50e-6, double highest = 60,
                                      int per_decade = 3);

class Histogram {
public:
  static constexpr size_t kMaxBuckets = 40;

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
