#pragma once
// How long a request waits for its response head before it is hedged ([[cluster]] hedge): a
// fixed delay, or the worker's recent first-byte latency at a quantile (p95: one request in
// twenty is hedged), read off the cluster's first_byte histogram at most once a second, over
// the requests since the last reading, never below the fixed delay.
#include "config/config.h"
#include "metrics/histogram.h"

#include <vector>

namespace portico::upstream {

class HedgeDelay {
public:
  // Requests a window needs before its quantile replaces the last one.
  static constexpr uint64_t kMinSamples = 20;

  double get(const config::HedgeConfig& cfg, const metrics::Histogram& first_byte, double now);

  // The q-quantile of the counts per bucket (the last one +Inf) of a histogram with these
  // bounds, interpolated within its bucket as Prometheus' histogram_quantile does; -1 when
  // there are none.
  static double quantile(const std::vector<double>& bounds, const std::vector<uint64_t>& counts,
                         double q);

private:
  double value_ = -1;
  double read_at_ = -1e18;
  std::vector<uint64_t> last_; // the counts at the last reading
};

} // namespace portico::upstream
