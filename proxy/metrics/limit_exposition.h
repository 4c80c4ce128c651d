#pragma once
// The series of rate limits, concurrency limits, forward auths and the Redis of shared limits.
#include <prometheus/metric_family.h>
#include <vector>

namespace portico::metrics {

void append_limit_metrics(std::vector<prometheus::MetricFamily>& out);

} // namespace portico::metrics
