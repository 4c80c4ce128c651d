#pragma once
// One worker thread's view of a configured cluster: a pool per endpoint, and the choice of
// endpoint for each request (least outstanding requests, round robin among equals). Endpoints
// given by name are resolved with the worker's DnsResolver and re-resolved when the answer's
// TTL runs out; requests wait in the pool's queue until a first answer arrives.
#include "config/config.h"
#include "upstream/upstream_pool.h"

#include <memory>
#include <vector>

namespace portico::upstream {

class DnsResolver;

class Cluster {
public:
  // worker_index of worker_count: how this worker's share of max_connections is computed.
  // tls: the cluster's TLS client context ([[cluster]] tls), or null.
  Cluster(struct ev_loop* loop, core::DeferredQueue& deferred, DnsResolver& resolver,
          const config::ClusterConfig& cfg, int worker_index, int worker_count,
          metrics::ClusterMetrics& metrics, SSL_CTX* tls = nullptr);
  metrics::ClusterMetrics& metrics() const { return metrics_; }
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  UpstreamPool& pick();
  const config::ClusterConfig& config() const { return cfg_; }
  const std::vector<std::unique_ptr<UpstreamPool>>& pools() const { return pools_; }

  // This worker's share of a whole-proxy connection limit: the shares add up to the limit,
  // and no worker gets none (so a limit below the worker count is exceeded, by design).
  static int share(int max_connections, int worker_index, int worker_count);

private:
  struct NameRefresh {
    Cluster* cluster;
    size_t index;
    ev_timer timer;
  };
  static void refresh_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void resolve(size_t index);
  void on_resolved(size_t index, std::vector<SocketAddress> addresses, int ttl);

  struct ev_loop* loop_;
  DnsResolver& resolver_;
  const config::ClusterConfig& cfg_;
  metrics::ClusterMetrics& metrics_;
  std::vector<std::unique_ptr<UpstreamPool>> pools_;
  std::vector<std::unique_ptr<NameRefresh>> refresh_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true); // guards resolver callbacks
  size_t next_ = 0;
};

} // namespace portico::upstream
