#include "routing/endpoint_affinity.h"

#include "http/request_key.h"

#include <string>
#include <xxhash.h>

namespace portico::routing {

upstream::Affinity affinity_of(const upstream::Cluster& cluster, const http::RequestHead& req,
                               std::string_view client) {
  upstream::Affinity a;
  const auto& cfg = cluster.config();
  if (cfg.sticky.enabled)
    a.sticky = http::cookie_value(req, cfg.sticky.cookie);
  if (cluster.hashes()) {
    thread_local std::string key; // no allocation once warm
    if (http::build_key(cfg.hash_on, req, client, cfg.name, key)) {
      a.hash = XXH64(key.data(), key.size(), 0);
      a.hashed = true;
    }
  }
  return a;
}

std::optional<http::Header> sticky_cookie(const config::StickyConfig& sticky,
                                          const upstream::UpstreamPool& chosen,
                                          const http::RequestHead& req, http::Arena& arena) {
  if (!sticky.enabled || chosen.sticky_id.empty() ||
      http::cookie_value(req, sticky.cookie) == chosen.sticky_id)
    return std::nullopt;
  thread_local std::string v;
  v.assign(sticky.cookie)
      .append("=")
      .append(chosen.sticky_id)
      .append("; Path=")
      .append(sticky.path);
  if (sticky.max_age > 0)
    v.append("; Max-Age=").append(std::to_string(static_cast<int64_t>(sticky.max_age)));
  if (sticky.secure)
    v.append("; Secure");
  if (sticky.httponly)
    v.append("; HttpOnly");
  return http::Header{"set-cookie", arena.copy(v)};
}

} // namespace portico::routing
