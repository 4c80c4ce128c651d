#include "metrics/worker_metrics.h"

namespace portico::metrics {

const char* to_string(Protocol p) {
  switch (p) {
  case Protocol::H1: return "h1";
  case Protocol::H2C: return "h2c";
  case Protocol::H2: return "h2";
  case Protocol::COUNT: break;
  }
  return "unknown";
}

WorkerMetrics::WorkerMetrics(const config::Config& cfg, const std::vector<double>* bounds) {
  for (size_t i = 0; i <= cfg.routes.size(); ++i)
    routes_.push_back(std::make_unique<RouteMetrics>(bounds));
  for (size_t i = 0; i < cfg.clusters.size(); ++i)
    clusters_.push_back(std::make_unique<ClusterMetrics>(bounds, cfg.clusters[i].endpoints.size()));
}

} // namespace portico::metrics
