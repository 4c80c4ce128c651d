#include "metrics/worker_metrics.h"

#include <algorithm>

namespace portico::metrics {

DiskCacheLevels& disk_cache_levels() {
  static DiskCacheLevels levels;
  return levels;
}

const char* to_string(Protocol p) {
  switch (p) {
  case Protocol::H1: return "h1";
  case Protocol::H2C: return "h2c";
  case Protocol::H2: return "h2";
  case Protocol::H3: return "h3";
  case Protocol::COUNT: break;
  }
  return "unknown";
}

WorkerMetrics::WorkerMetrics(const config::Config& cfg, const std::vector<double>* bounds) {
  for (size_t i = 0; i < cfg.route_stats.size(); ++i)
    routes_.push_back(std::make_shared<RouteMetrics>(bounds));
  for (size_t i = 0; i < cfg.clusters.size(); ++i)
    clusters_.push_back(std::make_shared<ClusterMetrics>(bounds, cfg.clusters[i].endpoints.size()));
}

WorkerMetrics::WorkerMetrics(const config::Config& cfg, const std::vector<double>* bounds,
                             const WorkerMetrics& previous, const std::vector<int>& kept_clusters,
                             const std::vector<int>& kept_routes)
    : WorkerMetrics(cfg, bounds) {
  compression_ = previous.compression_;
  cache_ = previous.cache_;
  for (size_t i = 0; i < clusters_.size() && i < kept_clusters.size(); ++i)
    if (kept_clusters[i] >= 0)
      clusters_[i] = previous.clusters_[static_cast<size_t>(kept_clusters[i])];
  for (size_t i = 0; i < routes_.size() && i < kept_routes.size(); ++i)
    if (kept_routes[i] >= 0)
      routes_[i] = previous.routes_[static_cast<size_t>(kept_routes[i])];
}

EndpointTotals endpoint_totals(std::span<const WorkerMetrics* const> shards, size_t cluster,
                               size_t endpoint) {
  EndpointTotals t;
  for (const WorkerMetrics* s : shards) {
    const auto& g = s->cluster(cluster).endpoints[endpoint];
    t.idle += g.idle.get();
    t.busy += g.busy.get();
    t.waiting += g.waiting.get();
    t.unhealthy += g.unhealthy.get();
    t.connect_failures = std::max(t.connect_failures, g.connect_failures.get());
  }
  return t;
}

} // namespace portico::metrics
