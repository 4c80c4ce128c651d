#pragma once
// What convert-nginx builds from an nginx configuration before writing it as TOML: Portico's
// listeners, clusters and routes, each remembering the nginx directive it came from.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace portico::convert {

// Keys in the order they are written, each value already TOML ("30", "\"x\"", "{ a = 1 }").
using TomlKeys = std::vector<std::pair<std::string, std::string>>;

// Sets key (a key given twice, as in two http blocks, keeps its place and takes the last value).
inline void put(TomlKeys& keys, const std::string& key, const std::string& value) {
  for (auto& [k, v] : keys)
    if (k == key) {
      v = value;
      return;
    }
  keys.emplace_back(key, value);
}

struct SniOut {
  std::vector<std::string> server_names;
  std::string certificate, private_key;
};

struct ListenerOut {
  std::string address;
  std::string where;
  bool proxy_protocol = false;
  bool tls = false;
  bool has_default_certificate = false;
  std::string certificate, private_key, min_version, ciphers;
  std::vector<std::string> certificate_hosts; // the names of the server whose it is
  std::vector<SniOut> sni;
  std::string access_log, access_log_format;
};

struct EndpointOut {
  std::string address;
  int weight = 1;
};

struct ClusterOut {
  std::string name;
  std::string where;
  std::vector<EndpointOut> endpoints;
  TomlKeys keys; // lb, hash_on, fail_timeout, ... in the order found
  bool tls = false;
  std::optional<double> connect_timeout, response_timeout, send_timeout;
};

struct RouteOut {
  std::string where; // the location (or server) it came from
  std::string note;  // a comment line written above it
  std::string host, scheme;
  std::string path_key = "path_prefix"; // path_prefix, path_exact or path_regex
  std::string path = "/";
  TomlKeys keys; // cluster, prefix_rewrite, redirect, static, compress, ...
};

struct ConvertedConfig {
  TomlKeys server; // [server]
  TomlKeys log;    // [log]
  std::vector<ListenerOut> listeners;
  std::vector<ClusterOut> clusters;
  std::vector<RouteOut> routes;
  std::vector<std::string> warnings;
};

std::string write_toml(const ConvertedConfig& c, const std::string& source);

} // namespace portico::convert
