// upstream blocks and proxy_pass as clusters; limit_req_zone and proxy_cache_path.
#include "convert/converter.h"

#include <algorithm>

namespace portico::convert {

namespace {

// A cluster name Portico takes from any upstream name or address.
std::string cluster_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
      c = '_';
  return s;
}

std::optional<std::string> hash_part(const std::string& var, std::string* why) {
  std::optional<std::vector<std::string>> k = nginx_key(var);
  if (!k || k->size() != 1) {
    *why = "hashing on '" + var + "' is not carried over";
    return std::nullopt;
  }
  return (*k)[0];
}

} // namespace

void Converter::upstream(const Directive& u) {
  if (u.args.size() != 1)
    return warn(u, "takes one name");
  ClusterOut c;
  c.name = cluster_name(u.args[0]);
  c.where = u.where() + " (upstream " + u.args[0] + ")";
  std::optional<double> fail_timeout;
  int max_fails = 1;
  for (const auto& d : u.block) {
    if (d.name == "server" && !d.args.empty()) {
      std::optional<std::string> address = nginx_endpoint(d.args[0], 80);
      if (!address) {
        warn(d, "'" + d.args[0] + "' is not an address Portico can take");
        continue;
      }
      EndpointOut e{*address, 1};
      bool keep = true;
      for (size_t i = 1; i < d.args.size(); ++i) {
        const std::string& p = d.args[i];
        if (p.starts_with("weight=")) {
          auto w = nginx_size(p.substr(7));
          e.weight = w && *w >= 1 && *w <= 1000 ? static_cast<int>(*w) : 1;
        } else if (p.starts_with("max_fails=")) {
          max_fails = static_cast<int>(nginx_size(p.substr(10)).value_or(1));
        } else if (p.starts_with("fail_timeout=")) {
          fail_timeout = nginx_seconds(p.substr(13));
        } else if (p.starts_with("max_conns=") && nginx_count(p.substr(10))) {
          put(c.keys, "max_connections", std::to_string(*nginx_count(p.substr(10))));
        } else if (p == "down") {
          warn(d, "a server marked down is left out");
          keep = false;
        } else {
          warn(d, "'" + p + "' is not carried over");
        }
      }
      if (keep)
        c.endpoints.push_back(e);
    } else if (d.name == "keepalive" && d.args.size() == 1 && nginx_count(d.args[0])) {
      put(c.keys, "max_idle_per_endpoint", std::to_string(*nginx_count(d.args[0])));
    } else if (d.name == "keepalive_timeout" && d.args.size() == 1 && nginx_seconds(d.args[0])) {
      put(c.keys, "idle_timeout", toml_number(*nginx_seconds(d.args[0])));
    } else if (d.name == "least_conn") {
      put(c.keys, "lb", "\"least_request\"");
    } else if (d.name == "random") {
      put(c.keys, "lb", "\"random_two\"");
    } else if (d.name == "ip_hash") {
      put(c.keys, "lb", "\"ring_hash\"");
      put(c.keys, "hash_on", "\"client\"");
    } else if (d.name == "hash" && !d.args.empty()) {
      std::string why;
      if (std::optional<std::string> part = hash_part(d.args[0], &why)) {
        put(c.keys, "lb", "\"ring_hash\"");
        put(c.keys, "hash_on", toml_string(*part));
        if (d.args.size() < 2 || d.args[1] != "consistent")
          warn(d, "written as a consistent hash (ring_hash): Portico has no other");
      } else {
        warn(d, why);
      }
    } else if (d.name == "zone") {
      continue; // Portico's workers share their endpoints' state without one
    } else {
      not_carried(d);
    }
  }
  if (c.endpoints.empty())
    return warn(u, "has no server Portico can take: left out");
  if (fail_timeout)
    put(c.keys, "fail_timeout", toml_number(max_fails == 0 ? 0 : *fail_timeout));
  else if (max_fails == 0)
    put(c.keys, "fail_timeout", "0");
  if (max_fails > 1)
    put(c.keys, "outlier_detection",
        "{ consecutive_gateway_errors = " + std::to_string(max_fails) + ", base_ejection_time = " +
            toml_number(fail_timeout.value_or(10)) + " }  # nginx's max_fails");
  upstreams_[u.args[0]] = out_.clusters.size();
  out_.clusters.push_back(std::move(c));
}

void Converter::limit_req_zone(const Directive& d) {
  LimitZone z;
  std::string name;
  for (size_t i = 1; i < d.args.size(); ++i) {
    const std::string& p = d.args[i];
    if (p.starts_with("zone=")) {
      std::string v = p.substr(5);
      size_t colon = v.find(':');
      name = v.substr(0, colon);
      if (colon != std::string::npos)
        z.bytes = nginx_size(v.substr(colon + 1)).value_or(0);
    } else if (p.starts_with("rate=")) {
      z.rate = nginx_rate(p.substr(5)).value_or("");
    }
  }
  if (d.args.empty() || name.empty() || z.rate.empty())
    return warn(d, "needs a key, zone=NAME:SIZE and rate=");
  std::optional<std::vector<std::string>> key = nginx_key(d.args[0]);
  if (!key)
    return warn(d, "the key '" + d.args[0] + "' is not carried over: its limit_req are left out");
  z.key = *key;
  limit_zones_[name] = z;
}

void Converter::proxy_cache_path(const Directive& d) {
  if (d.args.empty() || d.args[0].empty() || d.args[0][0] != '/')
    return warn(d, "needs an absolute path");
  CacheZone z;
  z.path = d.args[0];
  std::string name;
  for (size_t i = 1; i < d.args.size(); ++i) {
    const std::string& p = d.args[i];
    if (p.starts_with("keys_zone="))
      name = p.substr(10, p.find(':') - 10);
    else if (p.starts_with("max_size="))
      z.max_size = nginx_size(p.substr(9));
    else if (!p.starts_with("levels=") && !p.starts_with("use_temp_path="))
      warn(d, "'" + p + "' is not carried over");
  }
  if (name.empty())
    return warn(d, "needs keys_zone=");
  cache_zones_[name] = z;
}

std::optional<size_t> Converter::proxy_pass_cluster(const Directive& d, std::string* uri) {
  if (d.args.size() != 1)
    return warn(d, "takes one URL"), std::nullopt;
  std::string url = d.args[0];
  bool tls = false;
  if (url.starts_with("http://")) {
    url = url.substr(7);
  } else if (url.starts_with("https://")) {
    url = url.substr(8);
    tls = true;
  } else {
    return warn(d, "only http:// and https:// are carried over"), std::nullopt;
  }
  if (has_variable(url))
    return warn(d, "a URL with variables is not carried over"), std::nullopt;
  std::string authority;
  if (url.starts_with("unix:")) {
    // http://unix:/path/to.sock:/uri
    size_t colon = url.find(':', 5);
    authority = url.substr(0, colon);
    *uri = colon == std::string::npos ? "" : url.substr(colon + 1);
  } else {
    size_t slash = url.find('/');
    authority = url.substr(0, slash);
    *uri = slash == std::string::npos ? "" : url.substr(slash);
  }
  if (auto it = upstreams_.find(authority); it != upstreams_.end()) {
    out_.clusters[it->second].tls |= tls;
    return it->second;
  }
  std::optional<std::string> endpoint = nginx_endpoint(authority, tls ? 443 : 80);
  if (!endpoint)
    return warn(d, "'" + authority + "' is not an address Portico can take"), std::nullopt;
  upstreams_[authority] = out_.clusters.size();
  ClusterOut c;
  c.name = cluster_name(authority);
  c.where = d.where() + " (proxy_pass " + d.args[0] + ")";
  c.endpoints.push_back({*endpoint, 1});
  c.tls = tls;
  out_.clusters.push_back(std::move(c));
  return out_.clusters.size() - 1;
}

void Converter::give_timeouts(size_t index, const Scope& s, const Directive& where) {
  ClusterOut& c = out_.clusters[index];
  auto give = [&](std::optional<double>& to, const std::optional<double>& from, const char* what) {
    if (!from)
      return;
    if (to && *to != *from)
      warn(where, std::string(what) + " differs between locations of cluster " + c.name +
                      ": Portico keeps the first, " + toml_number(*to));
    else
      to = from;
  };
  give(c.connect_timeout, s.connect_timeout, "proxy_connect_timeout");
  give(c.response_timeout, s.read_timeout, "proxy_read_timeout");
  give(c.send_timeout, s.send_timeout, "proxy_send_timeout");
}

} // namespace portico::convert
