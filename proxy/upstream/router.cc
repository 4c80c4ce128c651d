#include "upstream/router.h"

#include "upstream/grpc_status.h"
#include "upstream/proxied_exchange.h"

namespace portico::upstream {

namespace {
// "example.com:8080" -> "example.com"; "[::1]:8080" -> "[::1]".
std::string_view strip_port(std::string_view a) {
  if (!a.empty() && a.front() == '[') {
    auto close = a.find(']');
    return close == std::string_view::npos ? a : a.substr(0, close + 1);
  }
  return a.substr(0, a.find(':'));
}
} // namespace

Router::Router(const config::Config& cfg, std::vector<std::shared_ptr<Cluster>> clusters,
               metrics::WorkerMetrics& metrics,
               const std::vector<std::unique_ptr<metrics::AccessLog>>& access_logs)
    : cfg_(cfg), clusters_(std::move(clusters)), metrics_(metrics), access_logs_(access_logs) {
  fwd_.add_forwarded = cfg.server.add_forwarded;
  fwd_.trusted_proxies = cfg.server.trusted_proxies;
  fwd_.add_via = cfg.server.add_via;
  fwd_.request_id_header = cfg.server.request_id_header;
}

bool Router::host_matches(std::string_view pattern, std::string_view authority) {
  if (pattern.empty())
    return true;
  authority = strip_port(authority);
  if (pattern.starts_with("*.")) {
    std::string_view suffix = pattern.substr(1); // ".example.com"
    return authority.size() > suffix.size() &&
           http::iequals(authority.substr(authority.size() - suffix.size()), suffix);
  }
  return http::iequals(pattern, authority);
}

void Router::on_request(server::Exchange& ex) {
  const auto& req = ex.request();
  std::string_view path = req.path();
  for (size_t i = 0; i < cfg_.routes.size(); ++i) {
    const auto& r = cfg_.routes[i];
    if (!path.starts_with(r.path_prefix) || !host_matches(r.host, req.authority))
      continue;
    metrics::AccessLog* log = ex.listener_index() < access_logs_.size()
                                  ? access_logs_[ex.listener_index()].get()
                                  : nullptr;
    double tunnel = 0;
    if (req.is_websocket_upgrade()) {
      if (r.websocket) {
        tunnel = r.upgrade_timeout;
      } else if (req.version == http::Version::HTTP_2) {
        // An HTTP/1.1 Upgrade is forwarded as a plain request (without its Upgrade); an
        // extended CONNECT has no such reading.
        reject(ex, i, 501, "websocket is not enabled on this route\n");
        return;
      }
    }
    ProxiedExchange::start(ex, *clusters_[r.cluster_index], fwd_, metrics_.route(i), log,
                           &in_flight_, tunnel);
    return;
  }
  reject(ex, cfg_.routes.size(), 404, "no route\n");
}

void Router::reject(server::Exchange& ex, size_t route, int status, std::string_view body) {
  auto& m = metrics_.route(route);
  m.requests.inc(ex.listener_index(), ProxiedExchange::protocol_of(ex), status,
                 metrics::AnsweredBy::PROXY);
  m.duration.observe(0);
  if (ex.request().version == http::Version::HTTP_2 && grpc::is_grpc(ex.request()))
    grpc::respond_error(ex, status, body.substr(0, body.size() - 1));
  else
    ex.respond(status, "text/plain", body);
}

} // namespace portico::upstream
