// libFuzzer target for the configuration loader: any bytes as a TOML file. The loader must
// answer with a Config or with errors, each "FILE:LINE:COL: message", and never crash, throw or
// hang (a 20-digit port once ended `portico -t` on an uncaught std::stoi exception). A Config it
// accepts must hold what validation promises: what the router, the pools, the health checker
// and the logs take for granted without checking again.
#include "config/config_loader.h"
#include "core/endpoint_address.h"
#include "core/histogram_bounds.h"
#include "core/listen_address.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <re2/re2.h>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

// A broken invariant names itself: a crash file alone does not say which check it broke.
#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "config_fuzz.cc:%d: FUZZ_CHECK(%s) failed\n", __LINE__, #cond);         \
      __builtin_trap();                                                                            \
    }                                                                                              \
  } while (0)

// The file is read as if it lived in tests/fuzz/config_files/: a seed's relative paths then
// name the key pair there (TLS is accepted only with files that exist and match), and every
// path the loader resolves against the file's directory must come out absolute.
#ifndef PORTICO_FUZZ_CONFIG_DIR
#define PORTICO_FUZZ_CONFIG_DIR "/portico-fuzz"
#endif

namespace {

using namespace portico;
using namespace portico::config;

const std::string kPath = PORTICO_FUZZ_CONFIG_DIR "/fuzz.toml";

// "FILE:LINE:COL: " in front, as `portico -t` and editors expect.
bool positioned(const std::string& m) {
  if (!m.starts_with(kPath + ":"))
    return false;
  size_t at = kPath.size() + 1;
  for (int field = 0; field < 2; ++field) {
    size_t start = at;
    while (at < m.size() && m[at] >= '0' && m[at] <= '9')
      ++at;
    if (at == start || at >= m.size() || m[at++] != ':')
      return false;
  }
  return at < m.size() && m[at] == ' ';
}

bool resolved(const std::string& path) {
  return path.empty() || path[0] == '/';
}

bool lower(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
}

// JSON is written field by field; every other format is the parsed line its name or template
// says, so that the writer never parses and never falls back.
void check_log_format(const ListenerConfig& l) {
  bool custom = l.access_log_format == AccessLogFormat::CUSTOM;
  FUZZ_CHECK(custom == !l.access_log_template.empty());
  if (l.access_log_format == AccessLogFormat::JSON) {
    FUZZ_CHECK(l.access_log_line.empty());
    return;
  }
  std::string_view text = custom ? std::string_view(l.access_log_template)
                          : l.access_log_format == AccessLogFormat::COMBINED ? kCombinedLogFormat
                                                                             : kTextLogFormat;
  auto line = parse_log_format(text);
  FUZZ_CHECK(line && *line == l.access_log_line && !line->empty());
  for (size_t i = 0; i < line->size(); ++i) {
    const LogPiece& p = (*line)[i];
    // A piece without a field is only the line's literal tail.
    FUZZ_CHECK(p.field != LogField::NONE || (i + 1 == line->size() && !p.literal.empty()));
    FUZZ_CHECK((p.field == LogField::REQUEST_FIELD) == !p.field_name.empty());
  }
}

void check_listeners(const Config& c) {
  for (size_t i = 0; i < c.listeners.size(); ++i) {
    const ListenerConfig& l = c.listeners[i];
    // Two binds of one socket: the second fails at start, or SO_REUSEPORT splits connections.
    for (size_t j = 0; j < i; ++j)
      FUZZ_CHECK(!core::same_socket(l.address, c.listeners[j].address));
    FUZZ_CHECK(!c.admin.enabled || !core::same_socket(l.address, c.admin.address));
    FUZZ_CHECK(resolved(l.access_log) && l.max_connections >= 0);
    const TlsConfig& t = l.tls;
    if (l.tls_enabled) {
      FUZZ_CHECK(!t.certificate.empty() && !t.private_key.empty());
      FUZZ_CHECK(resolved(t.certificate) && resolved(t.private_key) && resolved(t.ocsp_staple));
      FUZZ_CHECK(t.min_version == 0x0303 || t.min_version == 0x0304);
      for (const SniCertificate& s : t.sni)
        FUZZ_CHECK(!s.server_names.empty() && !s.certificate.empty() && !s.private_key.empty() &&
                   resolved(s.certificate) && resolved(s.private_key));
    } else {
      FUZZ_CHECK(t.certificate.empty() && t.sni.empty());
    }
    check_log_format(l);
  }
}

void check_clusters(const Config& c) {
  for (size_t i = 0; i < c.clusters.size(); ++i) {
    const ClusterConfig& cl = c.clusters[i];
    // Routes find their cluster by name.
    FUZZ_CHECK(!cl.name.empty());
    for (size_t j = 0; j < i; ++j)
      FUZZ_CHECK(cl.name != c.clusters[j].name);
    FUZZ_CHECK(!cl.endpoints.empty() && cl.weights.size() == cl.endpoints.size());
    for (const std::string& e : cl.endpoints)
      FUZZ_CHECK(core::parse_endpoint(e).has_value());
    for (int w : cl.weights)
      FUZZ_CHECK(w >= 1 && w <= 1000);
    FUZZ_CHECK(to_string(cl.lb) != "?" && to_string(cl.protocol) != "?" &&
               to_string(cl.send_proxy_protocol) != "?");
    // Timers armed with 0 would fire at once; negative counts would wrap.
    FUZZ_CHECK(cl.queue_timeout >= 0 && cl.connect_timeout > 0 && cl.send_timeout > 0 &&
               cl.response_timeout > 0 && cl.idle_timeout >= 0 && cl.fail_timeout >= 0);
    FUZZ_CHECK(cl.h2_connections >= 1 && cl.max_connections >= 0 && cl.max_idle_per_endpoint >= 0 &&
               cl.max_response_header_bytes >= 1024);
    // The PROXY header names one client and goes before any TLS byte.
    FUZZ_CHECK(cl.send_proxy_protocol == ProxyProtocolVersion::NONE ||
               (!cl.tls.enabled && cl.protocol == UpstreamProtocol::HTTP1));
    const ClusterTlsConfig& t = cl.tls;
    if (t.enabled)
      FUZZ_CHECK(t.certificate.empty() == t.private_key.empty() && resolved(t.ca) &&
                 resolved(t.certificate) && resolved(t.private_key));
    else
      FUZZ_CHECK(t == ClusterTlsConfig{});
    const HealthCheckConfig& h = cl.health_check;
    if (h.enabled)
      FUZZ_CHECK(h.path.starts_with('/') && h.interval > 0 && h.timeout > 0 && h.healthy >= 1 &&
                 h.unhealthy >= 1 && h.expect_min >= 100 && h.expect_min <= h.expect_max &&
                 h.expect_max <= 599);
    else
      FUZZ_CHECK(h == HealthCheckConfig{});
  }
}

void check_routes(const Config& c) {
  std::unordered_set<std::string> labels, names;
  for (const RouteConfig& r : c.routes) {
    // The router tries path_exact, then a regex, then path_prefix: a route with none of the
    // three would take every path, one with two would ignore one.
    int kinds = !r.path_prefix.empty() + !r.path_exact.empty() + !r.path_regex.empty();
    FUZZ_CHECK(kinds == 1);
    FUZZ_CHECK(r.path_prefix.empty() || r.path_prefix[0] == '/');
    FUZZ_CHECK(r.path_exact.empty() || r.path_exact[0] == '/');
    // The router compiles it again and does not look at ok().
    FUZZ_CHECK(r.path_regex.empty() || re2::RE2(r.path_regex, re2::RE2::Quiet).ok());
    FUZZ_CHECK(r.scheme.empty() || r.scheme == "http" || r.scheme == "https");
    // prefix_rewrite replaces path_prefix.size() bytes of the path.
    FUZZ_CHECK(!r.has_prefix_rewrite ||
               (!r.path_prefix.empty() && r.prefix_rewrite.starts_with('/')));
    // A route answers itself or passes the request to a cluster that exists.
    FUZZ_CHECK(!(r.has_redirect && r.has_direct_response));
    if (r.cluster.empty())
      FUZZ_CHECK(r.has_redirect || r.has_direct_response);
    else
      FUZZ_CHECK(r.cluster_index < c.clusters.size() &&
                 c.clusters[r.cluster_index].name == r.cluster);
    FUZZ_CHECK(!r.websocket || r.cluster.empty() ||
               c.clusters[r.cluster_index].protocol == UpstreamProtocol::HTTP1);
    const RedirectAction& rd = r.redirect;
    if (r.has_redirect)
      FUZZ_CHECK((rd.code == 301 || rd.code == 302 || rd.code == 303 || rd.code == 307 ||
                  rd.code == 308) &&
                 (rd.scheme.empty() || rd.scheme == "http" || rd.scheme == "https") &&
                 (rd.path.empty() || rd.path[0] == '/'));
    else
      FUZZ_CHECK(rd == RedirectAction{});
    if (r.has_direct_response)
      FUZZ_CHECK(r.direct_response.status >= 200 && r.direct_response.status <= 599);
    else
      FUZZ_CHECK(r.direct_response == DirectResponse{});
    // Field names go out as HTTP/2 names too, where upper case is a protocol error; a CR or LF
    // in a value would split an HTTP/1 head.
    for (const auto* add : {&r.request_headers_add, &r.response_headers_add})
      for (const auto& [name, value] : *add)
        FUZZ_CHECK(!name.empty() && lower(name) && value.find_first_of("\r\n") == value.npos);
    for (const auto* remove : {&r.request_headers_remove, &r.response_headers_remove})
      for (const std::string& name : *remove)
        FUZZ_CHECK(lower(name));
    FUZZ_CHECK(r.timeout >= 0 && r.upgrade_timeout > 0);
    FUZZ_CHECK(r.retry_on_reset >= -1 && r.retry_on_reset <= 1);
    FUZZ_CHECK(r.retry_non_idempotent >= -1 && r.retry_non_idempotent <= 1);
    // No filter claims a key here: any key not built in is an error.
    FUZZ_CHECK(r.settings.empty());
    // One /metrics series per route: labels are unique, the route's name or its match.
    FUZZ_CHECK(!r.label.empty() && labels.insert(r.label).second);
    if (!r.name.empty())
      FUZZ_CHECK(r.label == r.name && r.name.find_first_of("\r\n") == r.name.npos &&
                 names.insert(r.name).second);
    else
      FUZZ_CHECK(r.label.find(r.path_exact + r.path_regex + r.path_prefix) != r.label.npos);
  }
}

void check_config(const Config& c) {
  FUZZ_CHECK(c.path == kPath && !c.listeners.empty() && !c.routes.empty());
  for (const std::string& w : c.warnings)
    FUZZ_CHECK(positioned(w) && w.find(": warning: ") != w.npos);
  const ServerConfig& s = c.server;
  FUZZ_CHECK(s.workers >= 0 && s.keepalive_timeout > 0 && s.header_timeout > 0 &&
             s.send_timeout > 0 && s.grace_period >= 0);
  FUZZ_CHECK(s.max_header_bytes >= 1024 && s.max_body_bytes >= -1 &&
             s.h2_max_concurrent_streams >= 1 && s.max_connections >= 0);
  FUZZ_CHECK(s.request_id_header.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") ==
             s.request_id_header.npos);
  // `portico -s` and a restart from another directory must find the same files.
  FUZZ_CHECK(resolved(s.pid_file) && resolved(c.log.file));
  check_listeners(c);
  check_clusters(c);
  check_routes(c);
  // Histograms are made with these bounds and look values up by binary search.
  const std::vector<double>& b = c.metrics.buckets;
  FUZZ_CHECK(!b.empty() && b.size() <= core::kMaxHistogramBuckets);
  for (size_t i = 0; i < b.size(); ++i)
    FUZZ_CHECK(std::isfinite(b[i]) && b[i] > 0 && (i == 0 || b[i] > b[i - 1]));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> errors;
  auto c = parse_config(text, kPath, &errors);
  FUZZ_CHECK(c.has_value() == errors.empty());
  // ctest's fuzz.config_seeds: a seed the loader came to refuse would leave the fuzzer outside
  // everything past the errors, and say nothing.
  static const bool must_load = std::getenv("PORTICO_FUZZ_MUST_LOAD") != nullptr;
  if (must_load && !c) {
    for (const auto& e : errors)
      std::fprintf(stderr, "%s\n", e.c_str());
    __builtin_trap();
  }
  for (const auto& e : errors)
    FUZZ_CHECK(positioned(e));
  if (c)
    check_config(*c);
  return 0;
}
