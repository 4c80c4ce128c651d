#include "routing/router.h"

#include "routing/exchange_record.h"
#include "routing/proxied_exchange.h"

namespace portico::routing {

Router::Router(const config::Config& cfg, std::vector<std::shared_ptr<upstream::Cluster>> clusters,
               metrics::WorkerMetrics& metrics,
               const std::vector<std::unique_ptr<metrics::AccessLog>>& access_logs,
               FilterRegistry filters, core::DeferredQueue& deferred)
    : cfg_(cfg), clusters_(std::move(clusters)), access_logs_(access_logs), index_(cfg.routes) {
  fwd_.add_forwarded = cfg.server.add_forwarded;
  fwd_.trusted_proxies = cfg.server.trusted_proxies;
  fwd_.add_via = cfg.server.add_via;
  fwd_.request_id_header = cfg.server.request_id_header;
  ctx_ = {&fwd_, &deferred, &in_flight_, &kept_};
  auto add_filters = [&](Route& route, const config::RouteConfig* r) {
    for (const auto& kind : filters)
      if (auto factory = kind.make(r, metrics)) {
        route.http1_filters |= !factory->http2_only();
        route.filters.push_back(std::move(factory));
      }
  };
  routes_.resize(cfg.routes.size());
  for (size_t i = 0; i < cfg.routes.size(); ++i) {
    const auto& r = cfg.routes[i];
    Route& route = routes_[i];
    if (!r.cluster.empty())
      route.cluster = clusters_[r.cluster_index].get();
    route.metrics = &metrics.route(r.stat_group);
    route.label = r.label;
    add_filters(route, &r);
  }
  no_route_.metrics = &metrics.route(cfg.route_stats.size() - 1);
  add_filters(no_route_, nullptr);
  shadow_routes_.resize(clusters_.size());
  for (size_t c = 0; c < clusters_.size(); ++c) {
    shadow_routes_[c].cluster = clusters_[c].get();
    shadow_routes_[c].metrics = &shadow_metrics_;
    shadow_routes_[c].label = "mirror";
  }
}

Router::~Router() {
  // A response still read for a filter after its client went (the worker stops): it ends,
  // and is destroyed now, while the routes and clusters it uses are here.
  if (kept_.empty())
    return;
  while (KeptExchange* k = kept_.front())
    k->abandon();
  ctx_.deferred->run();
}

bool Router::host_matches(std::string_view pattern, std::string_view authority) {
  if (pattern.empty())
    return true;
  authority = http::host_of(authority);
  if (pattern.starts_with("*.")) {
    std::string_view suffix = pattern.substr(1); // ".example.com"
    return authority.size() > suffix.size() &&
           http::iequals(authority.substr(authority.size() - suffix.size()), suffix);
  }
  return http::iequals(pattern, authority);
}

std::string_view Router::matching_path(std::string_view path, std::string& scratch) {
  if (path.find("/.") == std::string_view::npos && path.find("//") == std::string_view::npos &&
      path.find('%') == std::string_view::npos)
    return path; // nearly every request: nothing to resolve
  thread_local std::string decoded;
  decoded.clear();
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size() && path[i + 1] == '2' &&
        (path[i + 2] == 'e' || path[i + 2] == 'E')) {
      decoded.push_back('.');
      i += 2;
    } else {
      decoded.push_back(path[i]);
    }
  }
  // Segments, with "." dropped, ".." taking the one before, empty ones merged.
  scratch.clear();
  size_t at = 0;
  while (at < decoded.size()) {
    size_t end = decoded.find('/', at + 1);
    if (end == std::string::npos)
      end = decoded.size();
    std::string_view seg(decoded.data() + at + 1, end - at - 1); // after its '/'
    if (seg == "..") {
      size_t cut = scratch.rfind('/');
      scratch.resize(cut == std::string::npos ? 0 : cut);
    } else if (!seg.empty() && seg != ".") {
      scratch.push_back('/');
      scratch.append(seg);
    }
    at = end;
  }
  if (scratch.empty() || (!decoded.empty() && decoded.back() == '/'))
    scratch.push_back('/'); // "/a/" stays a directory, "/.." the root
  return scratch;
}

size_t Router::purge(const PurgeRequest& r) {
  size_t n = 0;
  for (auto& route : routes_)
    for (auto& f : route.filters)
      n += f->purge(r);
  return n;
}

void Router::start(struct ev_loop* loop) {
  for (auto& route : routes_)
    for (auto& f : route.filters)
      f->start(loop);
  for (auto& f : no_route_.filters)
    f->start(loop);
}

void Router::on_refused(const server::Exchange& ex, int status) {
  ExchangeRecord record(ex, no_route_, log_for(ex));
  record.answered(status, metrics::AnsweredBy::PROXY);
  record.close(ex, {}, 0);
}

void Router::on_request(server::Exchange& ex) {
  if (int32_t shadow = ex.shadow_cluster(); shadow >= 0) {
    if (static_cast<size_t>(shadow) < shadow_routes_.size())
      ProxiedExchange::start(ex, shadow_routes_[shadow], ctx_, nullptr);
    else
      ProxiedExchange::answer(ex, no_route_, ctx_, nullptr, 404, "no route\n");
    return;
  }
  const auto& req = ex.request();
  thread_local std::string normalized;
  std::string_view path = matching_path(req.path(), normalized);
  const uint32_t i = index_.find(ex.over_tls(), req.authority, path);
  if (i == RouteIndex::kNone || (cfg_.routes[i].internal && !ex.internal())) {
    ProxiedExchange::answer(ex, no_route_, ctx_, log_for(ex), 404, "no route\n");
    return;
  }
  const auto& r = cfg_.routes[i];
  // The header scans only where they can matter: a WebSocket route, or an extended CONNECT.
  double tunnel = 0;
  if (r.websocket) {
    if (req.is_websocket_upgrade()) {
      // A handshake has no body (RFC 6455 4.1); one sent anyway would reach the upstream
      // as bytes after the head, where a server that declines the upgrade reads HTTP.
      if (!req.framed() && req.has_body()) {
        ProxiedExchange::answer(ex, routes_[i], ctx_, log_for(ex), 400,
                                "a WebSocket handshake has no body\n");
        return;
      }
      tunnel = r.upgrade_timeout;
    }
  } else if (!req.protocol.empty() && req.is_websocket_upgrade()) {
    // An HTTP/1.1 Upgrade is forwarded as a plain request (without its Upgrade); an
    // extended CONNECT has no such reading.
    ProxiedExchange::answer(ex, routes_[i], ctx_, log_for(ex), 501,
                            "websocket is not enabled on this route\n");
    return;
  }
  ProxiedExchange::start(ex, routes_[i], ctx_, log_for(ex), tunnel);
}

} // namespace portico::routing
