#include "config/sections.h"

#include "core/endpoint_address.h"

#include <charconv>

namespace portico::config {

namespace {

// "2xx", "200", "200-399" into [min, max].
bool parse_status_range(const std::string& s, int* min, int* max) {
  auto number = [](std::string_view v, int* out) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
    return ec == std::errc() && p == v.data() + v.size() && *out >= 100 && *out <= 599;
  };
  if (s.size() == 3 && s[1] == 'x' && s[2] == 'x' && s[0] >= '1' && s[0] <= '5') {
    *min = (s[0] - '0') * 100;
    *max = *min + 99;
    return true;
  }
  auto dash = s.find('-');
  if (dash == std::string::npos)
    return number(s, min) && number(s, max);
  return number(std::string_view(s).substr(0, dash), min) &&
         number(std::string_view(s).substr(dash + 1), max) && *min <= *max;
}

} // namespace

void read_cluster(Reader& r, const toml::table& t, Config& c) {
  const std::string w = "[[cluster]]";
  r.only_keys(t,
              {"name",
               "endpoints",
               "protocol",
               "max_connections",
               "queue_timeout",
               "connect_timeout",
               "send_timeout",
               "response_timeout",
               "idle_timeout",
               "max_idle_per_endpoint",
               "retry_on_reset",
               "retry_non_idempotent",
               "max_response_header_bytes",
               "fail_timeout",
               "h2_connections",
               "send_proxy_protocol",
               "tls",
               "lb",
               "health_check",
               "outlier_detection",
               "circuit_breakers",
               "retry",
               "hash_on",
               "sticky",
               "hedge"},
              w);
  ClusterConfig cl;
  r.get_string(t, "name", cl.name, w, true);
  for (const auto& other : c.clusters)
    if (!cl.name.empty() && other.name == cl.name)
      r.error(t.get("name")->source(), "cluster '" + cl.name + "' is defined twice");
  const std::string cw = "cluster '" + cl.name + "'";
  // Each endpoint a string, or { address = "...", weight = N }.
  if (const toml::array* a = t.get("endpoints") ? t.get("endpoints")->as_array() : nullptr) {
    for (const auto& e : *a) {
      if (auto s = e.value<std::string>()) {
        cl.endpoints.push_back(*s);
        cl.weights.push_back(1);
      } else if (const toml::table* et = e.as_table()) {
        const std::string ew = cw + " endpoint";
        r.only_keys(*et, {"address", "weight"}, ew);
        std::string address;
        r.get_string(*et, "address", address, ew, true);
        int weight = 1;
        r.get_number(*et, "weight", weight, ew, 1, 1000);
        cl.endpoints.push_back(address);
        cl.weights.push_back(weight);
      } else {
        r.error(e.source(), cw + ": an endpoint is a string or { address, weight }");
      }
    }
  } else {
    cl.endpoints = r.get_strings(t, "endpoints", cw);
    cl.weights.assign(cl.endpoints.size(), 1);
  }
  if (const toml::table* ht = r.get_table(t, "health_check", cw)) {
    const std::string hw = cw + " health_check";
    HealthCheckConfig& hc = cl.health_check;
    hc.enabled = true;
    r.only_keys(*ht,
                {"path", "host", "interval", "jitter", "timeout", "healthy", "unhealthy", "expect"},
                hw);
    if (r.get_string(*ht, "path", hc.path, hw) && (hc.path.empty() || hc.path[0] != '/'))
      r.error(ht->get("path")->source(), hw + ": path must start with '/'");
    r.get_string(*ht, "host", hc.host, hw);
    r.get_number(*ht, "interval", hc.interval, hw, 0.01, 86400);
    r.get_number(*ht, "jitter", hc.jitter, hw, 0, 0.5);
    r.get_number(*ht, "timeout", hc.timeout, hw, 0.001, 3600);
    r.get_number(*ht, "healthy", hc.healthy, hw, 1, 100);
    r.get_number(*ht, "unhealthy", hc.unhealthy, hw, 1, 100);
    std::string expect;
    if (r.get_string(*ht, "expect", expect, hw) &&
        !parse_status_range(expect, &hc.expect_min, &hc.expect_max))
      r.error(ht->get("expect")->source(),
              hw + ": expect is a status (\"200\"), a class (\"2xx\") or a range (\"200-399\")");
  }
  read_outlier_detection(r, t, cl.outlier, cw);
  read_circuit_breakers(r, t, cl.breakers, cw);
  read_retry(r, t, cl.retry, cw);
  read_hedge(r, t, cl.hedge, cw);
  r.get_enum(t, "lb", kLoadBalancings, cl.lb, cw,
             cw + ": lb is \"least_request\", \"round_robin\", \"random_two\", \"ring_hash\" "
                  "or \"maglev\"");
  read_hash_on(r, t, cl, cw);
  read_sticky(r, t, cl.sticky, cw);
  if (cl.endpoints.empty())
    r.error(t.source(), cw + ": 'endpoints' needs at least one endpoint");
  for (size_t i = 0; i < cl.endpoints.size(); ++i) {
    auto parsed = core::parse_endpoint(cl.endpoints[i]);
    if (parsed)
      continue;
    const std::string& why = parsed.error();
    const toml::node* n = t.get("endpoints");
    if (const toml::array* a = n->as_array(); a && i < a->size())
      n = a->get(i); // point at the entry itself
    r.error(n->source(), cw + ": endpoint '" + cl.endpoints[i] + "' " + why);
  }
  r.get_enum(t, "protocol", kUpstreamProtocols, cl.protocol, cw,
             cw + ": protocol must be \"http1\" or \"h2c\"");
  if (const toml::table* tt = r.get_table(t, "tls", cw)) {
    const std::string tw = cw + " tls";
    ClusterTlsConfig& tls = cl.tls;
    tls.enabled = true;
    r.only_keys(*tt, {"ca", "server_name", "certificate", "private_key", "verify"}, tw);
    r.get_bool(*tt, "verify", tls.verify, tw);
    r.get_string(*tt, "server_name", tls.server_name, tw);
    if (r.get_string(*tt, "ca", tls.ca, tw)) {
      tls.ca = r.resolve(tls.ca);
      r.readable_file(tt->get("ca"), tls.ca, "CA bundle");
    }
    bool cert = r.get_string(*tt, "certificate", tls.certificate, tw);
    bool key = r.get_string(*tt, "private_key", tls.private_key, tw);
    if (cert) {
      tls.certificate = r.resolve(tls.certificate);
      r.readable_file(tt->get("certificate"), tls.certificate, "certificate");
    }
    if (key) {
      tls.private_key = r.resolve(tls.private_key);
      r.readable_file(tt->get("private_key"), tls.private_key, "private key");
      check_key_mode(r, tt->get("private_key"), tls.private_key);
    }
    if (cert != key)
      r.error(tt->source(), tw + ": a client certificate needs both certificate and private_key");
    else if (cert)
      check_key_pair(r, tt->get("certificate"), tls.certificate, tt->get("private_key"),
                     tls.private_key);
  }
  if (r.get_enum(t, "send_proxy_protocol", kProxyProtocolVersions, cl.send_proxy_protocol, cw,
                 cw + ": send_proxy_protocol must be \"v1\", \"v2\" or \"\" (none)") &&
      cl.send_proxy_protocol != ProxyProtocolVersion::NONE) {
    if (cl.tls.enabled)
      r.error(t.get("send_proxy_protocol")->source(),
              cw + ": send_proxy_protocol with tls is not built yet (the header goes before the "
                   "TLS handshake)");
    else if (cl.protocol != UpstreamProtocol::HTTP1)
      r.error(t.get("send_proxy_protocol")->source(),
              cw + ": send_proxy_protocol needs protocol \"http1\": an h2c connection carries "
                   "many clients' requests, and the header names one client");
  }
  r.get_number(t, "max_connections", cl.max_connections, cw, 0, 1e6);
  r.get_number(t, "queue_timeout", cl.queue_timeout, cw, 0, 86400);
  r.get_number(t, "connect_timeout", cl.connect_timeout, cw, 0.001, 86400);
  r.get_number(t, "send_timeout", cl.send_timeout, cw, 0.001, 86400);
  r.get_number(t, "response_timeout", cl.response_timeout, cw, 0.001, 86400);
  r.get_number(t, "idle_timeout", cl.idle_timeout, cw, 0, 86400);
  r.get_number(t, "max_idle_per_endpoint", cl.max_idle_per_endpoint, cw, 0, 1e6);
  r.get_bool(t, "retry_on_reset", cl.retry_on_reset, cw);
  r.get_bool(t, "retry_non_idempotent", cl.retry_non_idempotent, cw);
  r.get_number(t, "max_response_header_bytes", cl.max_response_header_bytes, cw, 1024, 1 << 24);
  r.get_number(t, "fail_timeout", cl.fail_timeout, cw, 0, 86400);
  r.get_number(t, "h2_connections", cl.h2_connections, cw, 1, 1024);
  c.clusters.push_back(std::move(cl));
}

} // namespace portico::config
