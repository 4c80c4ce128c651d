#pragma once
// Portico's configuration, validated and immutable once loaded (config_loader.h makes it from
// TOML). Every field has the default a user of nginx or nghttpx would expect.
#include "config/config_enums.h"
#include "config/log_format.h"
#include "core/cidr.h"
#include "core/error_log.h"
#include "core/listen_address.h"
#include "http/request_key.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace portico::config {

struct SniCertificate {
  std::vector<std::string> server_names; // exact names or "*.example.com"
  std::string certificate;               // PEM chain, resolved relative to the config file
  std::string private_key;
};

// Mozilla's "intermediate" choice for TLS 1.2: ECDHE key exchange and AEAD ciphers only, which
// is also what RFC 9113 9.2.2 leaves h2 (its Appendix A blocklist is everything else).
inline constexpr const char* kDefaultTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
inline constexpr const char* kDefaultTls13Ciphersuites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

struct TlsConfig {
  std::string certificate; // the default certificate
  std::string private_key;
  std::vector<SniCertificate> sni;
  int min_version = 0x0303;                             // TLS1_2_VERSION; "1.3" is 0x0304
  std::string ciphers = kDefaultTls12Ciphers;           // TLS 1.2, OpenSSL's cipher list syntax
  std::string ciphersuites = kDefaultTls13Ciphersuites; // TLS 1.3
  std::string ocsp_staple;                              // a DER OCSP response to staple, "" = none
  double ticket_key_rotation = 3600; // seconds; the previous key is still accepted
};

// HTTP/3 on a TLS listener's address, over UDP ([[listener]] quic): the same certificates,
// the same routes. Limits a client cannot raise, whatever it asks for.
struct QuicConfig {
  bool enabled = false;
  uint32_t max_streams = 100;               // request streams one connection may have open
  double idle_timeout = 30;                 // seconds without a packet: the connection is dropped
  uint32_t stream_window = 256 * 1024;      // request body bytes a stream may send unread
  uint32_t connection_window = 1024 * 1024; // ... and all of a connection's streams together
  uint32_t max_connections = 10000; // QUIC connections per worker; past it, new ones are refused
  // Address validation: a Retry (one round trip) before any handshake work once this many
  // handshakes are in progress on a worker; 0: always.
  uint32_t retry_above_handshakes = 100;
};

struct ListenerConfig {
  core::ListenAddress address;
  bool tls_enabled = false;
  TlsConfig tls;
  QuicConfig quic;
  std::string access_log; // path, "" = off
  AccessLogFormat access_log_format = AccessLogFormat::TEXT;
  std::string access_log_template;       // CUSTOM's, as written
  std::vector<LogPiece> access_log_line; // every format's but JSON's, parsed
  int max_connections = 0; // client connections on this listener, whole process; 0 = none
  // Open connections one client address may have on this listener, whole process; past it a
  // new one is closed at once (0 = none).
  int max_connections_per_client = 0;
  // Connections begin with a PROXY protocol header (v1 or v2, HAProxy's), whose source
  // address is the client's from then on: X-Forwarded-For, Forwarded, the access log,
  // trusted_proxies. A connection without a valid one within header_timeout is closed.
  bool proxy_protocol = false;
};

// Who may use the admin paths that change state (POST /cache/purge); the read-only ones answer
// whoever reaches the address. Reloaded with the rest of the file, unlike the sockets.
struct AdminAccess {
  std::string token_file; // "" = no token
  // SHA-256 of the token the file holds (32 bytes; empty without a file): a request's token
  // is hashed and compared in constant time, and the token itself is not kept.
  std::string token_sha256;
  // With neither a token nor a control socket: loopback peers may change state.
  bool allow_loopback_control = true;
};

struct AdminConfig {
  core::ListenAddress address;
  bool enabled = true;
  // A unix socket beside `address` whose peers may change state without a token (its file's
  // mode and owner decide who they are); path "" = none. Its mode and owner are set before it
  // listens.
  core::ListenAddress control_socket;
  std::string control_socket_owner; // as written: "USER[:GROUP]", "" = the process's
  AdminAccess access;
};

// Histograms: bucket upper bounds in seconds, either listed or log-spaced.
struct MetricsConfig {
  bool enabled = true;         // false: no latency histograms are recorded or exposed
  std::vector<double> buckets; // explicit bounds; empty = log-spaced as below
  double bucket_min = 50e-6;
  double bucket_max = 60;
  int buckets_per_decade = 3;
  // Past this many routes without a stat_name, those routes are counted per cluster
  // (route="(cluster)") instead of one set of series each: a scrape stays small however many
  // hosts the configuration carries. 0: always per cluster.
  size_t route_series_limit = 1000;
};

// TLS to a cluster's endpoints (nginx's proxy_ssl_*, Envoy's UpstreamTlsContext).
struct ClusterTlsConfig {
  bool enabled = false;
  std::string ca;          // PEM bundle the endpoints' certificates must chain to; "" = system's
  std::string server_name; // sent as SNI and verified; "" = the endpoint's host (a name or IP)
  std::string certificate; // a client certificate for endpoints that ask for one (mTLS)
  std::string private_key;
  bool verify = true; // false: any certificate is accepted (never for the open internet)
  bool operator==(const ClusterTlsConfig&) const = default;
};

// Active health checks of a cluster's endpoint addresses, over the cluster's own protocol.
struct HealthCheckConfig {
  bool enabled = false;
  std::string path = "/healthz";
  std::string host; // the Host / :authority sent; "" = the endpoint's
  double interval = 5;
  double jitter = 0.1; // each wait is interval give or take this share of it
  double timeout = 2;
  int healthy = 2;   // successes in a row that make an unhealthy address healthy again
  int unhealthy = 3; // failures in a row that make a healthy address unhealthy
  int expect_min = 200, expect_max = 299; // "2xx", "200", "200-399"
  bool operator==(const HealthCheckConfig&) const = default;
};

// Envoy's outlier detection ([[cluster]] outlier_detection; upstream/outlier_detector.h): an
// endpoint answering badly is passed over for a while, decided for every worker at once.
struct OutlierConfig {
  bool enabled = false;
  int consecutive_5xx = 5;            // 5xx answers in a row (0: not this way)
  int consecutive_gateway_errors = 5; // 502, 503, 504, failed connects, resets, timeouts in a row
  double interval = 10;               // seconds between success-rate sweeps (and un-ejections)
  double success_rate_stdev = 1.9;    // ejected below the mean minus this many deviations
  int success_rate_minimum_hosts = 5; // endpoints with enough requests for a sweep (0: never)
  int success_rate_request_volume = 100; // requests an endpoint needs in an interval to count
  double base_ejection_time = 30;        // seconds, times the endpoint's ejections so far
  double max_ejection_time = 300;        // the most any ejection lasts
  int max_ejection_percent = 10;         // of the cluster's endpoints out at once (at least one)
  bool operator==(const OutlierConfig&) const = default;
};

// Envoy's circuit breakers ([[cluster]] circuit_breakers): counts of the whole process; a
// request past one is answered 503 at once (a retry past max_retries is not made).
struct BreakerConfig {
  bool enabled = false;
  int max_pending = 0;  // requests waiting for a connection (0: no limit)
  int max_requests = 0; // requests in flight to the cluster
  int max_retries = 0;  // retries in flight
  bool operator==(const BreakerConfig&) const = default;
};

// How a failed try is tried again ([[cluster]] retry): how often, after how long, and how much
// of a cluster's load retries may be (Envoy's retry_policy and retry_budget). *What* may be
// retried stays routing/retry_policy.h's rule.
struct RetryConfig {
  int retries = 1;             // tries after the first (0: none)
  double per_try_timeout = 0;  // seconds from a try's request to its response head; 0: none
  std::vector<int> on_status;  // response statuses tried again as a reset is ([502, 503, 504])
  double backoff_base = 0.025; // seconds: the n-th retry waits a random part of base x 2^(n-1)
  double backoff_max = 0.25;   // ...at most this
  int budget_percent = 0; // retries in flight at most this % of requests in flight (0: no budget)
  int budget_min_concurrency = 3; // ...but this many are always allowed
  bool operator==(const RetryConfig&) const = default;
};

// Sticky sessions by a cookie the proxy sets (nginx's `sticky cookie`): a request whose cookie
// names an endpoint that is up goes there; any other is balanced as usual and its response
// sets the cookie to the endpoint it went to.
struct StickyConfig {
  bool enabled = false;
  std::string cookie = "portico_endpoint";
  double max_age = 0; // seconds; 0: a session cookie
  std::string path = "/";
  bool secure = false;
  bool httponly = true;
  bool operator==(const StickyConfig&) const = default;
};

// Request hedging ([[cluster]] hedge): a request that may be retried and has had no response
// head within the delay is sent to a second endpoint too; the first head wins, the other try is
// cancelled. A hedge is a retry to the budget and the max_retries breaker.
struct HedgeConfig {
  bool enabled = false;
  double delay = 0.05; // seconds; with quantile, the least delay
  double quantile = 0; // (0, 1): the worker's recent first-byte latency at it instead (0.95)
  bool operator==(const HedgeConfig&) const = default;
};

struct ClusterConfig {
  std::string name;
  std::vector<std::string> endpoints; // "unix:/path", "IP:port", "name:port"
  std::vector<int> weights;           // per endpoint (every address of a name), 1 by default
  LoadBalancing lb = LoadBalancing::LEAST_REQUEST; // how a request's endpoint address is chosen
  // ring_hash and maglev: what the request is hashed on (http/request_key.h's parts, joined);
  // a request without it goes to an endpoint drawn by weight.
  std::vector<http::KeyPart> hash_on = {{http::KeyPart::CLIENT, {}}};
  StickyConfig sticky;
  UpstreamProtocol protocol = UpstreamProtocol::HTTP1;
  int h2_connections = 1;   // h2c: connections per endpoint per worker that requests spread over
  int max_connections = 0;  // per endpoint, whole proxy; 0 = unlimited
  double queue_timeout = 5; // seconds a request may wait for a connection
  double connect_timeout = 5;
  double send_timeout = 60;         // while the request goes up: longest time without progress
  double response_timeout = 60;     // to the first response byte (then idle between reads)
  double idle_timeout = 0;          // pooled idle connection retired after; 0 = learned/4 s
  int max_idle_per_endpoint = 1024; // per worker thread
  bool retry_on_reset = true;       // one retry when no response byte came back (see below)
  size_t max_response_header_bytes = 65536; // a response head (or trailer section), 502 above
  bool retry_non_idempotent = false;        // ...for POST/PATCH too (nginx: non_idempotent)
  double fail_timeout = 10; // an endpoint whose connect failed is passed over this long; 0 = never
  // Each upstream connection starts with a PROXY protocol header naming the client's
  // addresses; such a connection carries one client's requests only.
  ProxyProtocolVersion send_proxy_protocol = ProxyProtocolVersion::NONE;
  // TLS to the endpoints, ALPN "http/1.1" (protocol http1) or "h2" (protocol h2c: HTTP/2,
  // over TLS here); the handshake counts in connect_timeout.
  ClusterTlsConfig tls;
  HealthCheckConfig health_check;
  OutlierConfig outlier;
  BreakerConfig breakers;
  RetryConfig retry;
  HedgeConfig hedge;

  // A reload keeps a cluster's pools and metrics only when nothing in it changed.
  bool operator==(const ClusterConfig&) const = default;
};

struct RedirectAction {
  std::string scheme; // "" = the request's
  std::string host;   // "" = the request's (without its port when the scheme changes)
  std::string path;   // "" = the request's path and query
  int code = 301;
  bool operator==(const RedirectAction&) const = default;
};

struct DirectResponse {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain";
  bool operator==(const DirectResponse&) const = default;
};

struct RouteConfig {
  // What /metrics and the logs call it: its name, or what it matches ("*/api/", "*=/ping",
  // "example.com~/v[0-9]+/.*"), unique (config/route_labels.cc).
  std::string name;
  std::string label;
  // The series it is counted in (Config::route_stats): its own, the one of every route with
  // the same stat_name (Envoy's stat_prefix), or its cluster's past route_series_limit.
  std::string stat_name;
  size_t stat_group = 0;
  // Matching, first match wins: host, then the path by exactly one of path_prefix,
  // path_exact and path_regex (RE2, the whole path), then the scheme ("http": cleartext
  // requests only, as for an edge's port-80 redirect; "https": TLS only; "" any).
  std::string host; // "" = any; exact, or "*.example.com"
  std::string path_prefix = "/";
  std::string path_exact;
  std::string path_regex;
  std::string scheme;
  std::string cluster;      // "" only with redirect or direct_response
  size_t cluster_index = 0; // resolved at load time
  // WebSocket (an HTTP/1.1 Upgrade, or RFC 8441's extended CONNECT over HTTP/2) is tunnelled
  // to the cluster, which must speak HTTP/1.1; off, the Upgrade is not forwarded (Envoy's
  // upgrade_configs are opt-in too).
  bool websocket = false;
  double upgrade_timeout = 300;
  // Only the proxy's own requests (a forward auth's) may use it: a client's that matches it is
  // answered 404, as if no route had (nginx's `internal`).
  bool internal = false; // a tunnel with no byte either way for this long is closed
  // Actions. The path prefix matched replaced by this one (only with path_prefix); fields
  // added to and removed from the request and the response (names lower case).
  std::string prefix_rewrite;
  bool has_prefix_rewrite = false;
  std::vector<std::pair<std::string, std::string>> request_headers_add, response_headers_add;
  std::vector<std::string> request_headers_remove, response_headers_remove;
  bool has_redirect = false;
  RedirectAction redirect;
  bool has_direct_response = false;
  DirectResponse direct_response;
  // Overrides of the cluster's: a deadline for the whole response (0: none; 504 before it
  // began, a reset after), and the retry policy (-1: the cluster's, 0 off, 1 on).
  double timeout = 0;
  int retry_on_reset = -1;
  int retry_non_idempotent = -1;
  // Traffic mirroring (Envoy's request_mirror_policies, nginx's mirror): a fraction of the
  // requests copied to a shadow cluster, fire and forget; the shadow's answer is dropped.
  struct Mirror {
    std::string cluster;
    size_t cluster_index = 0;
    double fraction = 1;                 // of the route's requests, drawn at random
    std::string host_suffix = "-shadow"; // added to the host (before any port)
    size_t max_body = 1 << 20;           // a body past it: the shadow request is abandoned
    bool operator==(const Mirror&) const = default;
  };
  bool has_mirror = false;
  Mirror mirror;
  // The values of keys that filters claim (config/route_settings.h), as their readers made
  // them: the filter that claimed `key` knows T.
  std::vector<std::pair<std::string, std::shared_ptr<const void>>> settings;
  template <typename T> const T* settings_for(std::string_view key) const {
    for (const auto& [k, v] : settings)
      if (k == key)
        return static_cast<const T*>(v.get());
    return nullptr;
  }
};

struct ServerConfig {
  int workers = 0;          // 0 = one per core
  double grace_period = 30; // SIGTERM: how long in-flight work may finish
  // How long WebSockets may go on after TERM or USR2 before their goodbye (a close frame,
  // 1001), at most until 1 s before grace_period ends.
  double long_lived_drain = 30;
  double keepalive_timeout = 60; // client connections
  double header_timeout = 30;    // from a request head's first byte to its end (408)
  double send_timeout = 60;      // a client that takes no response byte for this long is cut
  size_t max_header_bytes = 32768;
  long long max_body_bytes = -1; // -1 = unlimited
  bool add_via = false;
  bool add_forwarded = true; // X-Forwarded-For/-Proto and Forwarded
  // Clients whose X-Forwarded-For, X-Forwarded-Proto and Forwarded are kept (and appended to);
  // from anyone else they are replaced. Empty: trust nobody (an edge proxy).
  std::vector<core::Cidr> trusted_proxies;
  std::string request_id_header = "x-request-id";
  int h2_max_concurrent_streams = 100; // nghttpx's and nginx's default
  // An HTTP/2 connection without a stream for this long gives its session back (0: never).
  double h2_sleep_after = 1;
  int max_connections = 0; // client connections, whole process (split across workers); 0 = none
  // Buffer memory for the whole process, past which accepting pauses; 0 = none.
  double max_buffer_memory = 1 << 30;
  double max_buffered_response_bytes = 4 << 20; // per connection or stream, then it is aborted
  std::string pid_file; // written at start, removed at exit; what `portico -s` signals; "" = none
  // DNS servers for endpoint names ("IP" or "IP:PORT", nginx's resolver); empty: those of
  // /etc/resolv.conf.
  std::vector<std::string> resolvers;
};

// The error log; access logs are per listener.
struct LogConfig {
  core::log::Level level = core::log::Level::INFO;
  std::string file; // "" = stderr
};

// One set of per-route series in /metrics and the live stats: a route, the routes sharing a
// stat_name, or a cluster's routes past [metrics] route_series_limit.
inline constexpr const char* kClusterStatLabel = "(cluster)";
struct RouteStatGroup {
  std::string label;               // the "route" label
  std::string cluster;             // the "cluster" label; "" for redirects and direct answers
  size_t cluster_index = SIZE_MAX; // SIZE_MAX: none
  std::string name; // unique, for the live stats: the label, or "label@cluster" when shared
};

struct Config {
  std::string path;
  // Not errors, but worth saying (a private key every user can read): FILE:LINE:COL: warning.
  std::vector<std::string> warnings;
  ServerConfig server;
  std::vector<ListenerConfig> listeners;
  AdminConfig admin;
  MetricsConfig metrics;
  LogConfig log;
  std::vector<ClusterConfig> clusters;
  std::vector<RouteConfig> routes;
  // The routes' series, then the one of requests no route matched ("none", "none").
  std::vector<RouteStatGroup> route_stats;
};

} // namespace portico::config
