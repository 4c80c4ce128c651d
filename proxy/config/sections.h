#pragma once
// The config loader's readers, one per section of the file (each in its NAME_section.cc), in
// the order config_loader.cc calls them.
#include "config/reader.h"
#include "config/route_settings.h"

namespace portico::config {

void read_server(Reader& r, const toml::table& t, ServerConfig& s);
void read_listener(Reader& r, const toml::table& t, Config& c);
// [admin], or its defaults without one; after the listeners, whose sockets it must not take.
void read_admin(Reader& r, const toml::table& root, Config& c);
void read_tls(Reader& r, const toml::table& t, TlsConfig& tls, const std::string& w);
// A private key file that any user may read (or write) is a leak waiting to happen: a warning.
void check_key_mode(Reader& r, const toml::node* at, const std::string& file);
// A certificate and its private key: each PEM that OpenSSL reads, and one pair.
void check_key_pair(Reader& r, const toml::node* cert_at, const std::string& cert,
                    const toml::node* key_at, const std::string& key);
void read_metrics(Reader& r, const toml::table& t, MetricsConfig& m);
void read_cluster(Reader& r, const toml::table& t, Config& c);
// A cluster's outlier_detection table, when it has one (cluster_policy_section.cc).
void read_outlier_detection(Reader& r, const toml::table& cluster, OutlierConfig& o,
                            const std::string& where);
// A cluster's circuit_breakers table, when it has one (cluster_policy_section.cc).
void read_circuit_breakers(Reader& r, const toml::table& cluster, BreakerConfig& b,
                           const std::string& where);
// A cluster's retry table, when it has one (cluster_policy_section.cc).
void read_retry(Reader& r, const toml::table& cluster, RetryConfig& rc, const std::string& where);
// A cluster's hedge table (cluster_policy_section.cc).
void read_hedge(Reader& r, const toml::table& cluster, HedgeConfig& h, const std::string& where);
// A cluster's hash_on (with lb ring_hash or maglev) and sticky table (cluster_policy_section.cc).
void read_hash_on(Reader& r, const toml::table& cluster, ClusterConfig& cl,
                  const std::string& where);
void read_sticky(Reader& r, const toml::table& cluster, StickyConfig& s, const std::string& where);
// After every cluster: routes name theirs.
// settings: the keys filters claim (config/route_settings.h).
void read_route(Reader& r, const toml::table& t, Config& c, RouteSettingsReaders settings);
// After every route: each its label in /metrics and the logs (route_labels.cc), unique.
// Then the series each is counted in (Config::route_stats).
void label_routes(Reader& r, const std::vector<const toml::table*>& tables, Config& c);

} // namespace portico::config
