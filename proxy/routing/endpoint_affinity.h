#pragma once
// What ties a request to an endpoint of its cluster: the hash of its hash_on key (lb = ring_hash
// or maglev), and a sticky cookie, read from the request and set on the response.
#include "http/arena.h"
#include "http/request_head.h"
#include "upstream/cluster.h"

#include <optional>

namespace portico::routing {

// req's affinity in cluster; client: the address its key names as "client".
upstream::Affinity affinity_of(const upstream::Cluster& cluster, const http::RequestHead& req,
                               std::string_view client);

// The Set-Cookie field that ties the client to chosen (copied into arena), when the cluster is
// sticky and req's cookie names another endpoint or none.
std::optional<http::Header> sticky_cookie(const config::StickyConfig& sticky,
                                          const upstream::UpstreamPool& chosen,
                                          const http::RequestHead& req, http::Arena& arena);

} // namespace portico::routing
