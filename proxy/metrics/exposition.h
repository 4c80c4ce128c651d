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

// The label a route is known by (config::RouteConfig::label: its name or its match, unique),
// or "none" for requests no route matched.
std::string route_label(const config::Config& cfg, size_t route_index);

} // namespace portico::metrics
