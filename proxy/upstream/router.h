#pragma once
// The proxy's request handler: matches a request's authority and path against the configured
// routes (first match wins) and hands it to its cluster as a ProxiedExchange. One Router per
// worker thread, with that worker's clusters.
#include "config/config.h"
#include "metrics/access_log.h"
#include "metrics/worker_metrics.h"
#include "server/exchange.h"
#include "upstream/cluster.h"
#include "upstream/request_writer.h"

#include <memory>
#include <vector>

namespace portico::upstream {

class Router final : public server::RequestHandler {
public:
  Router(const config::Config& cfg, std::vector<std::shared_ptr<Cluster>> clusters,
         metrics::WorkerMetrics& metrics,
         const std::vector<std::unique_ptr<metrics::AccessLog>>& access_logs);
  void on_request(server::Exchange& ex) override;
  const std::vector<std::shared_ptr<Cluster>>& clusters() const { return clusters_; }
  // Exchanges started here and not yet destroyed: after a reload, the old router (and the
  // configuration, metrics and access logs they use) is freed once none is left.
  uint32_t in_flight() const { return in_flight_; }

  // A route's host pattern against a request authority (port ignored): exact, or
  // "*.example.com" for any subdomain.
  static bool host_matches(std::string_view pattern, std::string_view authority);

private:
  // Answered here, counted under route (routes.size(): no route matched).
  void reject(server::Exchange& ex, size_t route, int status, std::string_view body);

  const config::Config& cfg_;
  std::vector<std::shared_ptr<Cluster>> clusters_;
  metrics::WorkerMetrics& metrics_;
  const std::vector<std::unique_ptr<metrics::AccessLog>>& access_logs_;
  ForwardingOptions fwd_;
  uint32_t in_flight_ = 0;
};

} // namespace portico::upstream
