#include "metrics/histogram.h"

#include <algorithm>
#include <cmath>

namespace portico::metrics {

std::vector<double> log_spaced_bounds(double lowest, double highest, int per_decade) {
  std::vector<double> out;
  // Capped well above what a config may ask for (the loader refuses more than kMaxBuckets).
  for (int k = 0; out.size() <= 1000; ++k) {
    double v = lowest * std::pow(10.0, static_cast<double>(k) / per_decade);
    double scale = std::pow(10.0, std::floor(std::log10(v)) - 1);
    v = std::round(v / scale) * scale;
    if (v >= highest) {
      out.push_back(highest);
      break;
    }
    out.push_back(v);
  }
  return out;
}

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
