#include "upstream/cluster.h"

#include <algorithm>

namespace portico::upstream {

int Cluster::share(int max_connections, int worker_index, int worker_count) {
  if (max_connections <= 0)
    return 0;
  int base = max_connections / worker_count;
  int extra = worker_index < max_connections % worker_count ? 1 : 0;
  return std::max(1, base + extra);
}

Cluster::Cluster(struct ev_loop* loop, core::DeferredQueue& deferred,
                 const config::ClusterConfig& cfg, const std::vector<SocketAddress>& addresses,
                 int worker_index, int worker_count)
    : cfg_(cfg) {
  int limit = share(cfg.max_connections, worker_index, worker_count);
  for (size_t i = 0; i < cfg.endpoints.size(); ++i) {
    auto spec = parse_endpoint(cfg.endpoints[i]);
    auto pool = std::make_unique<UpstreamPool>(loop, deferred, *spec, cfg, limit);
    if (i < addresses.size() && addresses[i].len > 0)
      pool->set_address(addresses[i]);
    pools_.push_back(std::move(pool));
  }
}

UpstreamPool& Cluster::pick() {
  size_t n = pools_.size();
  if (n == 1)
    return *pools_[0];
  // Start after the last choice so that equal loads rotate.
  size_t best = next_ % n;
  for (size_t k = 1; k < n; ++k) {
    size_t i = (next_ + k) % n;
    if (pools_[i]->load() < pools_[best]->load())
      best = i;
  }
  next_ = best + 1;
  return *pools_[best];
}

} // namespace portico::upstream
