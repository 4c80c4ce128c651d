#include "routing/real_client.h"

#include <vector>

namespace portico::routing {

std::string_view real_client(std::string_view peer, const http::RequestHead& req,
                             std::span<const core::Cidr> trusted) {
  if (trusted.empty() || !core::in_any(trusted, peer))
    return peer;
  // Every entry of every X-Forwarded-For line, in order; then from the right.
  thread_local std::vector<std::string_view> hops;
  hops.clear();
  for (const auto& h : req.headers) {
    if (h.name != "x-forwarded-for")
      continue;
    std::string_view rest = h.value;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      hops.push_back(http::trim_ows(rest.substr(0, comma)));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  std::string_view client = peer;
  for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
    auto c = core::parse_cidr(*it);
    if (!c || c->prefix != (c->v6 ? 128 : 32))
      break; // not an address: the last hop vouched for stands
    client = *it;
    if (!core::in_any(trusted, *it))
      break;
  }
  return client;
}

} // namespace portico::routing
