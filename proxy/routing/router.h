#pragma once
// The proxy's request handler: matches a request's authority and path against the configured
// routes (first match wins) and hands it to a ProxiedExchange with that route's filters and
// cluster. One Router per worker thread, with that worker's clusters.
#include "config/config.h"
#include "metrics/access_log.h"
#include "metrics/worker_metrics.h"
#include "routing/filter_registry.h"
#include "routing/proxied_exchange.h"
#include "routing/route.h"
#include "routing/route_index.h"
#include "server/exchange.h"
#include "upstream/cluster.h"
#include "upstream/request_writer.h"

#include <memory>
#include <vector>

namespace portico::routing {

class Router final : public server::RequestHandler {
public:
  // filters: what each route may use, in run order (filters::registry()); deferred: the
  // worker's, through which exchanges are destroyed.
  Router(const config::Config& cfg, std::vector<std::shared_ptr<upstream::Cluster>> clusters,
         metrics::WorkerMetrics& metrics,
         const std::vector<std::unique_ptr<metrics::AccessLog>>& access_logs,
         FilterRegistry filters, core::DeferredQueue& deferred);
  void on_request(server::Exchange& ex) override;
  // Counted and logged as no route's, answered by the proxy.
  void on_refused(const server::Exchange& ex, int status) override;
  // Every route's filters drop what they store for r (the admin's /cache/purge); how many.
  size_t purge(const PurgeRequest& r);
  // On the worker's thread, before it routes: every route's filter factories start on loop.
  void start(struct ev_loop* loop);
  const std::vector<std::shared_ptr<upstream::Cluster>>& clusters() const { return clusters_; }
  // Exchanges started here and not yet destroyed: after a reload, the old router (and the
  // configuration, metrics and access logs they use) is freed once none is left.
  uint32_t in_flight() const { return in_flight_; }

  // A route's host pattern against a request authority (port ignored): exact, or
  // "*.example.com" for any subdomain.
  static bool host_matches(std::string_view pattern, std::string_view authority);
  // The path routes are matched against: as sent, unless it has dot segments ("/a/../b"),
  // empty ones ("//") or an encoded dot ("%2e"), which the upstream would resolve to another
  // path than the one a route saw (a way past a route used to deny): then with those resolved
  // (RFC 3986 5.2.4), into scratch. The request goes upstream as it was sent.
  static std::string_view matching_path(std::string_view path, std::string& scratch);

  ~Router() override;

private:
  metrics::AccessLog* log_for(const server::Exchange& ex) const {
    return ex.listener_index() < access_logs_.size() ? access_logs_[ex.listener_index()].get()
                                                     : nullptr;
  }

  const config::Config& cfg_;
  std::vector<std::shared_ptr<upstream::Cluster>> clusters_;
  const std::vector<std::unique_ptr<metrics::AccessLog>>& access_logs_;
  upstream::ForwardingOptions fwd_;
  RouteIndex index_;
  std::vector<Route> routes_; // by route
  Route no_route_;            // for requests no route matched
  // A mirrored copy goes straight to its shadow cluster (server/mirror_exchange.h): one route
  // per cluster, no filters, counted in its own series, which /metrics does not show (the
  // copies are counted per cluster in portico_upstream_mirrored_total).
  std::vector<Route> shadow_routes_;
  std::vector<double> no_bounds_;
  metrics::RouteMetrics shadow_metrics_{&no_bounds_};
  RouterContext ctx_;
  uint32_t in_flight_ = 0;
  KeptExchanges kept_;
};

} // namespace portico::routing
