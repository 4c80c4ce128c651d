#pragma once
// Portico's groups for the live dashboard (metrics/live_stats.h), read from every worker's
// shard as a /metrics scrape reads them: each route (its requests by status class, and its
// total duration) and each cluster (the requests of the routes that send to it; its queue
// wait, connect, time to first byte and upstream total).
#include "config/config.h"
#include "metrics/live_stats.h"
#include "metrics/worker_metrics.h"

#include <string>
#include <vector>

namespace portico::metrics {

// The latency phases, in the order live_groups() fills them.
std::vector<std::string> live_phases();

std::vector<LiveGroup> live_groups(const config::Config& cfg,
                                   const std::vector<const WorkerMetrics*>& shards);

} // namespace portico::metrics
