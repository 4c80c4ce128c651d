#include "metrics/histogram.h"

#include <algorithm>
#include <cmath>

namespace portico::metrics {

void Histogram::observe(double seconds) {
  const auto& b = *bounds_;
  if (b.empty())
    return;
  size_t i = static_cast<size_t>(std::lower_bound(b.begin(), b.end(), seconds) - b.begin());
  bump(buckets_[i], 1);
  bump(count_, 1);
  bump(sum_ns_, static_cast<uint64_t>(std::max(0.0, seconds) * 1e9));
}

void Histogram::add_to(std::vector<uint64_t>& buckets, uint64_t& count, double& sum) const {
  buckets.resize(bounds_->size() + 1);
  for (size_t i = 0; i <= bounds_->size(); ++i)
    buckets[i] += buckets_[i].load(std::memory_order_relaxed);
  count += count_.load(std::memory_order_relaxed);
  sum += static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
}

} // namespace portico::metrics
