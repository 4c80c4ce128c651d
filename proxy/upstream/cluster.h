#pragma once
// One worker thread's view of a configured cluster: a pool per endpoint, and the choice of
// endpoint for each request (least outstanding requests, round robin among equals).
#include "config/config.h"
#include "upstream/upstream_pool.h"

#include <memory>
#include <vector>

namespace portico::upstream {

class Cluster {
public:
  // worker_index of worker_count: how this worker's share of max_connections is computed.
  Cluster(struct ev_loop* loop, core::DeferredQueue& deferred, const config::ClusterConfig& cfg,
          const std::vector<SocketAddress>& addresses, int worker_index, int worker_count);
  UpstreamPool& pick();
  const config::ClusterConfig& config() const { return cfg_; }
  const std::vector<std::unique_ptr<UpstreamPool>>& pools() const { return pools_; }

  // This worker's share of a whole-proxy connection limit: the shares add up to the limit,
  // and no worker gets none (so a limit below the worker count is exceeded, by design).
  static int share(int max_connections, int worker_index, int worker_count);

private:
  const config::ClusterConfig& cfg_;
  std::vector<std::unique_ptr<UpstreamPool>> pools_;
  size_t next_ = 0;
};

} // namespace portico::upstream
