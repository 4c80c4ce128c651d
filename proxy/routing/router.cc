#include "routing/router.h"

#include "routing/grpc_status.h"
#include "routing/proxied_exchange.h"

namespace portico::routing {

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

Router::Router(const config::Config& cfg, std::vector<std::shared_ptr<upstream::Cluster>> clusters,
               metrics::WorkerMetrics& metrics,
               const std::vector<std::unique_ptr<metrics::AccessLog>>& access_logs)
    : cfg_(cfg), clusters_(std::move(clusters)), metrics_(metrics), access_logs_(access_logs) {
  fwd_.add_forwarded = cfg.server.add_forwarded;
  fwd_.trusted_proxies = cfg.server.trusted_proxies;
  fwd_.add_via = cfg.server.add_via;
  fwd_.request_id_header = cfg.server.request_id_header;
  for (const auto& r : cfg.routes) {
    Compiled c;
    if (!r.path_regex.empty())
      c.regex = std::make_unique<re2::RE2>(r.path_regex, re2::RE2::Quiet); // checked at load
    c.options.timeout = r.timeout;
    c.options.retry_on_reset = r.retry_on_reset;
    c.options.retry_non_idempotent = r.retry_non_idempotent;
    for (const auto& [name, value] : r.response_headers_add)
      c.options.response_add.push_back({name, value});
    c.options.response_remove = r.response_headers_remove;
    for (const auto& [name, value] : r.request_headers_add)
      c.request_add.push_back({name, value});
    c.rewrites =
        r.has_prefix_rewrite || !r.request_headers_add.empty() || !r.request_headers_remove.empty();
    c.options.edits_response =
        !r.response_headers_add.empty() || !r.response_headers_remove.empty();
    compiled_.push_back(std::move(c));
  }
}

Router::~Router() = default;

bool Router::matches(const config::RouteConfig& r, const Compiled& c, const server::Exchange& ex,
                     std::string_view path) const {
  if (!r.scheme.empty() && (r.scheme == "https") != ex.over_tls())
    return false;
  if (!host_matches(r.host, ex.request().authority))
    return false;
  if (!r.path_exact.empty())
    return path == r.path_exact;
  if (c.regex)
    return re2::RE2::FullMatch(re2::StringPiece(path.data(), path.size()), *c.regex);
  return path.starts_with(r.path_prefix);
}

void Router::rewrite(server::Exchange& ex, const config::RouteConfig& r, const Compiled& c) {
  http::RequestHead& req = ex.mutable_request();
  if (r.has_prefix_rewrite) {
    std::string target = r.prefix_rewrite;
    std::string_view rest = req.target.substr(r.path_prefix.size());
    // "/api/" rewritten to "/" and "/api/v1" to "/v1": no doubled or missing slash.
    if (target.back() == '/' && !rest.empty() && rest.front() == '/')
      rest.remove_prefix(1);
    target.append(rest);
    req.target = ex.arena().copy(target);
  }
  if (!r.request_headers_remove.empty())
    std::erase_if(req.headers, [&](const http::Header& h) {
      return std::find(r.request_headers_remove.begin(), r.request_headers_remove.end(), h.name) !=
             r.request_headers_remove.end();
    });
  req.headers.insert(req.headers.end(), c.request_add.begin(), c.request_add.end());
}

void Router::redirect(server::Exchange& ex, size_t route) {
  const config::RedirectAction& rd = cfg_.routes[route].redirect;
  const auto& req = ex.request();
  std::string_view scheme = !rd.scheme.empty() ? std::string_view(rd.scheme)
                            : ex.over_tls()    ? std::string_view("https")
                                               : std::string_view("http");
  std::string_view host = rd.host.empty() ? req.authority : std::string_view(rd.host);
  bool scheme_changes = scheme != (ex.over_tls() ? "https" : "http");
  if (rd.host.empty() && scheme_changes)
    host = strip_port(host); // the port was the old scheme's
  std::string location;
  location.append(scheme).append("://").append(host);
  location.append(rd.path.empty() ? req.target : std::string_view(rd.path));
  auto& m = metrics_.route(route);
  m.requests.inc(ex.listener_index(), ProxiedExchange::protocol_of(ex), rd.code,
                 metrics::AnsweredBy::PROXY);
  m.duration.observe(0);
  std::string_view reason = http::reason_phrase(rd.code);
  std::string body = std::string(reason) + "\n";
  http::ResponseHead head;
  head.status = rd.code;
  head.content_length = static_cast<int64_t>(body.size());
  head.add("location", location);
  head.add("content-type", "text/plain");
  ex.send_head(head);
  ex.send_body(body);
  ex.end_response();
}

void Router::direct_response(server::Exchange& ex, size_t route) {
  const config::DirectResponse& d = cfg_.routes[route].direct_response;
  auto& m = metrics_.route(route);
  m.requests.inc(ex.listener_index(), ProxiedExchange::protocol_of(ex), d.status,
                 metrics::AnsweredBy::PROXY);
  m.duration.observe(0);
  ex.respond(d.status, d.content_type, d.body);
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

void Router::on_request(server::Exchange& ex) {
  const auto& req = ex.request();
  thread_local std::string normalized;
  std::string_view path = matching_path(req.path(), normalized);
  for (size_t i = 0; i < cfg_.routes.size(); ++i) {
    const auto& r = cfg_.routes[i];
    if (!matches(r, compiled_[i], ex, path))
      continue;
    if (r.has_redirect) {
      redirect(ex, i);
      return;
    }
    if (r.has_direct_response) {
      direct_response(ex, i);
      return;
    }
    metrics::AccessLog* log = ex.listener_index() < access_logs_.size()
                                  ? access_logs_[ex.listener_index()].get()
                                  : nullptr;
    // The header scans only where they can matter: a WebSocket route, or an extended CONNECT.
    double tunnel = 0;
    if (r.websocket) {
      if (req.is_websocket_upgrade()) {
        // A handshake has no body (RFC 6455 4.1); one sent anyway would reach the upstream
        // as bytes after the head, where a server that declines the upgrade reads HTTP.
        if (req.version != http::Version::HTTP_2 && req.has_body()) {
          reject(ex, i, 400, "a WebSocket handshake has no body\n");
          return;
        }
        tunnel = r.upgrade_timeout;
      }
    } else if (!req.protocol.empty() && req.is_websocket_upgrade()) {
      // An HTTP/1.1 Upgrade is forwarded as a plain request (without its Upgrade); an
      // extended CONNECT has no such reading.
      reject(ex, i, 501, "websocket is not enabled on this route\n");
      return;
    }
    if (compiled_[i].rewrites)
      rewrite(ex, r, compiled_[i]);
    ProxiedExchange::start(ex, *clusters_[r.cluster_index], fwd_, metrics_.route(i), log,
                           &in_flight_, tunnel, &compiled_[i].options);
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

} // namespace portico::routing
