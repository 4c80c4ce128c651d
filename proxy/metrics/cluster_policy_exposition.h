#pragma once
// The series of outlier detection (endpoints ejected now, ejections by reason) and of circuit
// breakers (places held, requests refused).
#include <prometheus/metric_family.h>
#include <vector>

namespace portico::metrics {

void append_cluster_policy_metrics(std::vector<prometheus::MetricFamily>& out, double now);

} // namespace portico::metrics
