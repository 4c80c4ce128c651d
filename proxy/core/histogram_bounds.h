#pragma once
// Histogram bucket bounds: what the configuration validates and the metrics record with. Here
// in core so that config/ needs nothing from metrics/ (which reads the Config).
#include <cstddef>
#include <vector>

namespace portico::core {

// Buckets a histogram holds at most (and so a [metrics] table may ask for).
inline constexpr size_t kMaxHistogramBuckets = 40;

// The default: the thresholds latency alerts are written on (5 ms, 10 ms, 25 ms, 50 ms, 100 ms,
// 250 ms, 500 ms, 1 s, 2.5 s, 5 s, 10 s), a few below for fast local upstreams, 30 s and 60 s
// above: every SLO line an operator draws falls on a bucket edge.
std::vector<double> default_bounds();

// Upper bounds in seconds, log-spaced from lowest to highest (per_decade bounds per factor of
// 10), rounded to two significant digits so that the `le` labels read well.
std::vector<double> log_spaced_bounds(double lowest = 50e-6, double highest = 60,
                                      int per_decade = 3);

} // namespace portico::core
