#pragma once
// The Prometheus text exposition of every worker's shard, merged: built as prometheus-cpp
// MetricFamily values and serialised by its TextSerializer. Runs on the admin thread only.
#include "config/config.h"
#include "metrics/server_stats.h"
#include "metrics/worker_metrics.h"

#include <string>
#include <vector>

namespace portico::metrics {

std::string expose(const config::Config& cfg, const std::vector<const WorkerMetrics*>& shards,
                   const std::vector<const ServerStats*>& servers, double uptime_seconds);

} // namespace portico::metrics
