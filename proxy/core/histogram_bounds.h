#pragma once
// Histogram bucket bounds: what the configuration validates and the metrics record with. Here
// in core so that config/ needs nothing from metrics/ (which reads the Config).
#include <cstddef>
#include <vector>

namespace portico::core {

// Buckets a histogram holds at most (and so a [metrics] table may ask for).
inline constexpr size_t kMaxHistogramBuckets = 40;

// Upper bounds in seconds, log-spaced from lowest to highest (per_decade bounds per factor of
// 10), rounded to two significant digits so that the `le` labels read well.
std::vector<double> log_spaced_bounds(double lowest = 50e-6, double highest = 60,
                                      int per_decade = 3);

} // namespace portico::core
