#pragma once
// Building prometheus-cpp's exposition types, for both /metrics endpoints (portico's and
// portico-backend's): a family, and a histogram sample from per-bucket counts.
#include <cstdint>
#include <limits>
#include <prometheus/metric_family.h>
#include <vector>

namespace portico::metrics {

inline prometheus::MetricFamily family(const char* name, const char* help,
                                       prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

// buckets: a count per bound (not cumulative), then one for +Inf.
inline prometheus::ClientMetric
histogram_metric(std::vector<prometheus::ClientMetric::Label> labels,
                 const std::vector<double>& bounds, const std::vector<uint64_t>& buckets,
                 double sum) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += buckets[i];
    m.histogram.bucket.push_back({cumulative, bounds[i]});
  }
  cumulative += buckets[bounds.size()];
  m.histogram.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
  // The count is the +Inf bucket, read above: a scrape racing a record stays consistent.
  m.histogram.sample_count = cumulative;
  m.histogram.sample_sum = sum;
  return m;
}

} // namespace portico::metrics
