#include "portico/worker_generation.h"

#include "config/config_diff.h"
#include "core/block_pool.h"
#include "filters/registry.h"

namespace portico::proxy {

namespace {
// A whole-process limit as one worker's share (rounded up, so the whole is never below it).
uint32_t share(int limit, int workers) {
  return limit <= 0 ? 0 : static_cast<uint32_t>((limit + workers - 1) / workers);
}

} // namespace

server::ServerLimits limits_for(const config::Config& cfg, int workers) {
  server::ServerLimits l;
  l.max_connections = share(cfg.server.max_connections, workers);
  double blocks = cfg.server.max_buffer_memory / sizeof(core::Block);
  l.max_buffer_blocks = blocks > 0 ? static_cast<int64_t>(blocks / workers) + 1 : 0;
  l.max_buffered_response_bytes = static_cast<size_t>(cfg.server.max_buffered_response_bytes);
  for (const auto& listener : cfg.listeners) {
    l.listener_max_connections.push_back(share(listener.max_connections, workers));
    l.listener_proxy_protocol.push_back(listener.proxy_protocol ? 1 : 0);
    // A day, as Caddy and Cloudflare advertise: a client that finds QUIC blocked falls back
    // to TCP on its own and remembers for its own while.
    l.listener_alt_svc.push_back(
        listener.quic.enabled ? "h3=\":" + std::to_string(listener.address.port) + "\"; ma=86400"
                              : std::string());
    // Not split across workers: one table the workers share counts the whole process's.
    int per_client = listener.max_connections_per_client;
    l.listener_max_per_client.push_back(static_cast<uint32_t>(per_client));
    l.listener_client_tables.push_back(
        per_client
            ? limits::CountTable::named("listener " + config::socket_key(listener.address), 65536)
            : nullptr);
  }
  l.keepalive_timeout = cfg.server.keepalive_timeout;
  l.header_timeout = cfg.server.header_timeout;
  l.send_timeout = cfg.server.send_timeout;
  l.parser.max_header_bytes = cfg.server.max_header_bytes;
  l.parser.max_body_bytes = cfg.server.max_body_bytes;
  l.h2_max_concurrent_streams = static_cast<uint32_t>(cfg.server.h2_max_concurrent_streams);
  l.h2_sleep_after = cfg.server.h2_sleep_after;
  l.server_name = "portico";
  return l;
}

WorkerGeneration::WorkerGeneration(const WorkerServices& services, GenerationSpec spec,
                                   const WorkerGeneration* previous)
    : spec_(std::move(spec)) {
  const config::Config& cfg = *spec_.cfg;
  std::vector<int> kept = previous ? config::kept_clusters(*previous->spec_.cfg, cfg)
                                   : std::vector<int>(cfg.clusters.size(), -1);
  std::vector<std::shared_ptr<upstream::Cluster>> clusters;
  for (size_t i = 0; i < cfg.clusters.size(); ++i) {
    if (kept[i] >= 0) {
      clusters.push_back(previous->router_->clusters()[static_cast<size_t>(kept[i])]);
      continue;
    }
    // The cluster reads its settings from this generation's configuration and counts into
    // this generation's shard: both live as long as the cluster, whichever generation holds
    // it last.
    auto* c =
        new upstream::Cluster(services.loop, services.deferred, services.resolver, cfg.clusters[i],
                              services.index, services.count, spec_.metrics->cluster(i),
                              i < spec_.cluster_tls.size() ? spec_.cluster_tls[i] : nullptr);
    clusters.emplace_back(c, [keep_cfg = spec_.cfg,
                              keep_metrics = spec_.metrics](upstream::Cluster* p) { delete p; });
  }
  for (size_t i = 0; i < cfg.listeners.size(); ++i)
    access_logs_.push_back(spec_.access_log_fds[i] < 0
                               ? nullptr
                               : std::make_unique<metrics::AccessLog>(
                                     services.loop, spec_.access_log_fds[i], cfg.listeners[i]));
  router_ = std::make_unique<routing::Router>(cfg, std::move(clusters), *spec_.metrics,
                                              access_logs_, filters::registry(), services.deferred);
}

WorkerGeneration::~WorkerGeneration() {
  router_.reset();
  access_logs_.clear();
}

} // namespace portico::proxy
