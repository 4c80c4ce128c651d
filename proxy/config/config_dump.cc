#include "config/config_dump.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <sstream>
#include <toml++/toml.h>
#include <vector>

namespace portico::config {

namespace {

// Endpoints as written: a string, or { address, weight } where the weight is not 1.
toml::array endpoints(const ClusterConfig& k) {
  toml::array out;
  for (size_t i = 0; i < k.endpoints.size(); ++i) {
    int w = i < k.weights.size() ? k.weights[i] : 1;
    if (w == 1)
      out.push_back(k.endpoints[i]);
    else
      out.push_back(toml::table{{"address", k.endpoints[i]}, {"weight", w}});
  }
  return out;
}

toml::array strings(const std::vector<std::string>& v) {
  toml::array a;
  for (const auto& s : v)
    a.push_back(s);
  return a;
}

toml::table tls_table(const TlsConfig& t) {
  toml::table out{{"certificate", t.certificate},
                  {"private_key", t.private_key},
                  {"min_version", t.min_version >= 0x0304 ? "1.3" : "1.2"},
                  {"ciphers", t.ciphers},
                  {"ciphersuites", t.ciphersuites},
                  {"ticket_key_rotation", t.ticket_key_rotation}};
  if (!t.ocsp_staple.empty())
    out.insert("ocsp_staple", t.ocsp_staple);
  if (!t.sni.empty()) {
    toml::array sni;
    for (const auto& s : t.sni)
      sni.push_back(toml::table{{"server_names", strings(s.server_names)},
                                {"certificate", s.certificate},
                                {"private_key", s.private_key}});
    out.insert("sni", std::move(sni));
  }
  return out;
}

// The token file's path, never the token; the control socket's keys only where it is set (an
// empty one would not load again).
toml::table admin_table(const AdminConfig& a) {
  toml::table out{{"address", a.address.text},
                  {"enabled", a.enabled},
                  {"allow_loopback_control", a.access.allow_loopback_control}};
  if (!a.access.token_file.empty())
    out.insert("token_file", a.access.token_file);
  if (!a.control_socket.path.empty()) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(a.control_socket.mode));
    out.insert("control_socket", a.control_socket.path);
    out.insert("control_socket_mode", std::string(mode));
    if (!a.control_socket_owner.empty())
      out.insert("control_socket_owner", a.control_socket_owner);
  }
  return out;
}

// Sizes and whole seconds are kept as doubles (1 << 30 bytes, 30 s), which toml++ prints as
// 1073741824.0: printed as the integers they are, and the rest at the precision that reads
// back the same (0.00025, not 0.00025000000000000001).
void whole_numbers(toml::node& n) {
  auto whole = [](const toml::node& v) -> std::optional<int64_t> {
    if (auto* d = v.as_floating_point()) {
      double x = d->get();
      if (x == std::floor(x) && std::fabs(x) < 9007199254740992.0)
        return static_cast<int64_t>(x);
    }
    return std::nullopt;
  };
  if (auto* t = n.as_table()) {
    std::vector<std::pair<std::string, int64_t>> ints;
    for (auto&& [k, v] : *t) {
      if (auto i = whole(v))
        ints.emplace_back(std::string(k.str()), *i);
      else
        whole_numbers(v);
    }
    for (const auto& [k, i] : ints)
      t->insert_or_assign(k, i);
  } else if (auto* a = n.as_array()) {
    for (size_t j = 0; j < a->size(); ++j) {
      if (auto i = whole(*a->get(j)))
        a->replace(a->cbegin() + static_cast<std::ptrdiff_t>(j), *i);
      else
        whole_numbers(*a->get(j));
    }
  }
}

} // namespace

std::string dump_config(const Config& c) {
  const ServerConfig& s = c.server;
  toml::array trusted;
  for (const auto& cidr : s.trusted_proxies)
    trusted.push_back(core::to_string(cidr));
  toml::table root{
      {"server", toml::table{{"workers", s.workers},
                             {"grace_period", s.grace_period},
                             {"long_lived_drain", s.long_lived_drain},
                             {"keepalive_timeout", s.keepalive_timeout},
                             {"header_timeout", s.header_timeout},
                             {"send_timeout", s.send_timeout},
                             {"max_header_bytes", static_cast<int64_t>(s.max_header_bytes)},
                             {"max_body_bytes", static_cast<int64_t>(s.max_body_bytes)},
                             {"via", s.add_via},
                             {"forwarded", s.add_forwarded},
                             {"trusted_proxies", std::move(trusted)},
                             {"request_id_header", s.request_id_header},
                             {"h2_max_concurrent_streams", s.h2_max_concurrent_streams},
                             {"h2_sleep_after", s.h2_sleep_after},
                             {"max_connections", s.max_connections},
                             {"max_buffer_memory", s.max_buffer_memory},
                             {"max_buffered_response_bytes", s.max_buffered_response_bytes},
                             {"pid_file", s.pid_file},
                             {"resolvers", strings(s.resolvers)}}},
      {"admin", admin_table(c.admin)}};

  toml::table metrics{{"enabled", c.metrics.enabled},
                      {"route_series_limit", static_cast<int64_t>(c.metrics.route_series_limit)}};
  if (!c.metrics.buckets.empty()) {
    toml::array b;
    for (double x : c.metrics.buckets)
      b.push_back(x);
    metrics.insert("buckets", std::move(b));
  } else {
    metrics.insert("bucket_min", c.metrics.bucket_min);
    metrics.insert("bucket_max", c.metrics.bucket_max);
    metrics.insert("buckets_per_decade", c.metrics.buckets_per_decade);
  }
  root.insert("metrics", std::move(metrics));
  root.insert("log",
              toml::table{{"level", core::log::to_string(c.log.level)}, {"file", c.log.file}});

  toml::array listeners;
  for (const auto& l : c.listeners) {
    toml::table t{{"address", l.address.text},
                  {"access_log", l.access_log},
                  {"access_log_format", l.access_log_format == config::AccessLogFormat::CUSTOM
                                            ? l.access_log_template
                                            : std::string(config::to_string(l.access_log_format))},
                  {"max_connections", l.max_connections},
                  {"max_connections_per_client", l.max_connections_per_client},
                  {"proxy_protocol", l.proxy_protocol}};
    if (l.tls_enabled)
      t.insert("tls", tls_table(l.tls));
    listeners.push_back(std::move(t));
  }
  root.insert("listener", std::move(listeners));

  toml::array clusters;
  for (const auto& k : c.clusters) {
    toml::table t{{"name", k.name},
                  {"endpoints", endpoints(k)},
                  {"lb", std::string(config::to_string(k.lb))},
                  {"protocol", std::string(config::to_string(k.protocol))},
                  {"h2_connections", k.h2_connections},
                  {"max_connections", k.max_connections},
                  {"queue_timeout", k.queue_timeout},
                  {"connect_timeout", k.connect_timeout},
                  {"send_timeout", k.send_timeout},
                  {"response_timeout", k.response_timeout},
                  {"idle_timeout", k.idle_timeout},
                  {"max_idle_per_endpoint", k.max_idle_per_endpoint},
                  {"retry_on_reset", k.retry_on_reset},
                  {"retry_non_idempotent", k.retry_non_idempotent},
                  {"max_response_header_bytes", static_cast<int64_t>(k.max_response_header_bytes)},
                  {"fail_timeout", k.fail_timeout},
                  {"send_proxy_protocol", std::string(config::to_string(k.send_proxy_protocol))}};
    if (k.tls.enabled) {
      toml::table tls{{"verify", k.tls.verify}, {"server_name", k.tls.server_name}};
      if (!k.tls.ca.empty())
        tls.insert("ca", k.tls.ca);
      if (!k.tls.certificate.empty()) {
        tls.insert("certificate", k.tls.certificate);
        tls.insert("private_key", k.tls.private_key);
      }
      t.insert("tls", std::move(tls));
    }
    if (k.health_check.enabled) {
      const auto& h = k.health_check;
      t.insert("health_check", toml::table{{"path", h.path},
                                           {"host", h.host},
                                           {"interval", h.interval},
                                           {"jitter", h.jitter},
                                           {"timeout", h.timeout},
                                           {"healthy", h.healthy},
                                           {"unhealthy", h.unhealthy},
                                           {"expect", std::to_string(h.expect_min) + "-" +
                                                          std::to_string(h.expect_max)}});
    }
    if (k.outlier.enabled) {
      const auto& o = k.outlier;
      t.insert("outlier_detection",
               toml::table{{"consecutive_5xx", o.consecutive_5xx},
                           {"consecutive_gateway_errors", o.consecutive_gateway_errors},
                           {"interval", o.interval},
                           {"success_rate_stdev", o.success_rate_stdev},
                           {"success_rate_minimum_hosts", o.success_rate_minimum_hosts},
                           {"success_rate_request_volume", o.success_rate_request_volume},
                           {"base_ejection_time", o.base_ejection_time},
                           {"max_ejection_time", o.max_ejection_time},
                           {"max_ejection_percent", o.max_ejection_percent}});
    }
    if (k.breakers.enabled)
      t.insert("circuit_breakers", toml::table{{"max_pending", k.breakers.max_pending},
                                               {"max_requests", k.breakers.max_requests},
                                               {"max_retries", k.breakers.max_retries}});
    if (k.lb == LoadBalancing::RING_HASH || k.lb == LoadBalancing::MAGLEV) {
      toml::array hash_on;
      for (const auto& p : k.hash_on)
        hash_on.push_back(http::to_string(p));
      t.insert("hash_on", std::move(hash_on));
    }
    if (k.sticky.enabled)
      t.insert("sticky", toml::table{{"cookie", k.sticky.cookie},
                                     {"max_age", k.sticky.max_age},
                                     {"path", k.sticky.path},
                                     {"secure", k.sticky.secure},
                                     {"httponly", k.sticky.httponly}});
    if (k.hedge.enabled)
      t.insert("hedge", toml::table{{"delay", k.hedge.delay}, {"quantile", k.hedge.quantile}});
    toml::array on_status;
    for (int status : k.retry.on_status)
      on_status.push_back(status);
    t.insert("retry", toml::table{{"retries", k.retry.retries},
                                  {"per_try_timeout", k.retry.per_try_timeout},
                                  {"on_status", std::move(on_status)},
                                  {"backoff_base", k.retry.backoff_base},
                                  {"backoff_max", k.retry.backoff_max},
                                  {"budget_percent", k.retry.budget_percent},
                                  {"budget_min_concurrency", k.retry.budget_min_concurrency}});
    clusters.push_back(std::move(t));
  }
  root.insert("cluster", std::move(clusters));

  toml::array routes;
  for (const auto& r : c.routes) {
    toml::table t{{"host", r.host},
                  {"websocket", r.websocket},
                  {"upgrade_timeout", r.upgrade_timeout},
                  {"internal", r.internal}};
    if (!r.cluster.empty())
      t.insert("cluster", r.cluster);
    if (!r.name.empty())
      t.insert("name", r.name);
    if (!r.stat_name.empty())
      t.insert("stat_name", r.stat_name);
    for (auto [key, value] :
         {std::pair{"path_prefix", &r.path_prefix}, std::pair{"path_exact", &r.path_exact},
          std::pair{"path_regex", &r.path_regex}, std::pair{"scheme", &r.scheme}})
      if (!value->empty())
        t.insert(key, *value);
    if (r.has_prefix_rewrite)
      t.insert("prefix_rewrite", r.prefix_rewrite);
    auto fields = [](const std::vector<std::pair<std::string, std::string>>& v) {
      toml::table out;
      for (const auto& [k, val] : v)
        out.insert(k, val);
      return out;
    };
    if (!r.request_headers_add.empty())
      t.insert("request_headers_add", fields(r.request_headers_add));
    if (!r.response_headers_add.empty())
      t.insert("response_headers_add", fields(r.response_headers_add));
    if (!r.request_headers_remove.empty())
      t.insert("request_headers_remove", strings(r.request_headers_remove));
    if (!r.response_headers_remove.empty())
      t.insert("response_headers_remove", strings(r.response_headers_remove));
    if (r.has_redirect) {
      toml::table rd{{"code", r.redirect.code}};
      if (!r.redirect.scheme.empty())
        rd.insert("scheme", r.redirect.scheme);
      if (!r.redirect.host.empty())
        rd.insert("host", r.redirect.host);
      if (!r.redirect.path.empty())
        rd.insert("path", r.redirect.path);
      t.insert("redirect", std::move(rd));
    }
    if (r.has_direct_response)
      t.insert("direct_response", toml::table{{"status", r.direct_response.status},
                                              {"body", r.direct_response.body},
                                              {"content_type", r.direct_response.content_type}});
    if (r.timeout > 0)
      t.insert("timeout", r.timeout);
    if (r.retry_on_reset >= 0 || r.retry_non_idempotent >= 0) {
      toml::table retry;
      if (r.retry_on_reset >= 0)
        retry.insert("on_reset", r.retry_on_reset == 1);
      if (r.retry_non_idempotent >= 0)
        retry.insert("non_idempotent", r.retry_non_idempotent == 1);
      t.insert("retry", std::move(retry));
    }
    if (r.has_mirror)
      t.insert("mirror", toml::table{{"cluster", r.mirror.cluster},
                                     {"fraction", r.mirror.fraction},
                                     {"host_suffix", r.mirror.host_suffix},
                                     {"max_body", static_cast<int64_t>(r.mirror.max_body)}});
    routes.push_back(std::move(t));
  }
  root.insert("route", std::move(routes));

  whole_numbers(root);
  std::ostringstream out;
  out << "# effective configuration of " << c.path << " (portico -T): defaults filled in\n"
      << toml::toml_formatter(root, toml::toml_formatter::default_flags |
                                        toml::format_flags::relaxed_float_precision)
      << "\n";
  return out.str();
}

} // namespace portico::config
