#include "upstream/hedge_delay.h"

#include <algorithm>

namespace portico::upstream {

double HedgeDelay::get(const config::HedgeConfig& cfg, const metrics::Histogram& first_byte,
                       double now) {
  if (cfg.quantile <= 0 || first_byte.bounds().empty())
    return cfg.delay;
  if (now - read_at_ >= 1) {
    read_at_ = now;
    std::vector<uint64_t> counts(first_byte.bounds().size() + 1, 0);
    uint64_t count = 0;
    double sum = 0;
    first_byte.add_to(counts, count, sum);
    std::vector<uint64_t> window = counts;
    uint64_t in_window = count;
    if (last_.size() == counts.size()) {
      in_window = 0;
      for (size_t i = 0; i < counts.size(); ++i)
        in_window += window[i] = counts[i] - last_[i];
    }
    if (in_window >= kMinSamples) {
      value_ = quantile(first_byte.bounds(), window, cfg.quantile);
      last_ = std::move(counts);
    }
  }
  return std::max(cfg.delay, value_);
}

double HedgeDelay::quantile(const std::vector<double>& bounds, const std::vector<uint64_t>& counts,
                            double q) {
  uint64_t total = 0;
  for (uint64_t c : counts)
    total += c;
  if (total == 0 || bounds.empty())
    return -1;
  double rank = q * static_cast<double>(total);
  uint64_t below = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (static_cast<double>(below + counts[i]) >= rank && counts[i] > 0) {
      if (i >= bounds.size())
        return bounds.back(); // in +Inf: the highest bound is all that is known
      double lo = i == 0 ? 0 : bounds[i - 1], hi = bounds[i];
      return lo + (hi - lo) * (rank - static_cast<double>(below)) / static_cast<double>(counts[i]);
    }
    below += counts[i];
  }
  return bounds.back();
}

} // namespace portico::upstream
