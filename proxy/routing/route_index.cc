#include "routing/route_index.h"

#include "http/header.h"
#include "http/request_head.h"

#include <algorithm>

namespace portico::routing {

namespace {

std::string lower(std::string_view s) {
  std::string out;
  http::assign_lower(out, s);
  return out;
}

} // namespace

void RouteIndex::First::add(uint32_t route, const std::string& scheme) {
  // A slot keeps its first route: later ones with the same match are never reached.
  for (int tls = 0; tls < 2; ++tls)
    if (by_tls[tls] == kNone && (scheme.empty() || (scheme == "https") == (tls == 1)))
      by_tls[tls] = route;
}

RouteIndex::RouteIndex(const std::vector<config::RouteConfig>& routes) {
  for (size_t i = 0; i < routes.size(); ++i) {
    const config::RouteConfig& r = routes[i];
    const auto route = static_cast<uint32_t>(i);
    if (r.host.empty())
      any_host_.add(route, r);
    else if (r.host.starts_with("*."))
      wildcards_[lower(r.host.substr(1))].add(route, r);
    else
      hosts_[lower(r.host)].add(route, r);
  }
}

RouteIndex::~RouteIndex() = default;

void RouteIndex::Bucket::add(uint32_t route, const config::RouteConfig& r) {
  if (!r.path_exact.empty()) {
    exact[r.path_exact].add(route, r.scheme);
  } else if (!r.path_regex.empty()) {
    Regex& rx = regexes.emplace_back(
        Regex{route, {}, std::make_unique<re2::RE2>(r.path_regex, re2::RE2::Quiet)});
    rx.only.add(route, r.scheme);
  } else {
    uint32_t at = 0;
    for (char c : r.path_prefix) {
      auto& next = trie[at].next;
      auto it = std::find_if(next.begin(), next.end(), [c](const auto& e) { return e.first == c; });
      if (it != next.end()) {
        at = it->second;
        continue;
      }
      const auto child = static_cast<uint32_t>(trie.size());
      next.emplace_back(c, child); // before the push_back below moves the nodes
      trie.emplace_back();
      at = child;
    }
    trie[at].first.add(route, r.scheme);
  }
}

void RouteIndex::Bucket::find(bool over_tls, std::string_view path, uint32_t& best) const {
  if (!exact.empty())
    if (auto it = exact.find(path); it != exact.end())
      best = std::min(best, it->second.by_tls[over_tls]);
  // Every prefix of the path that a route names: the lowest index among them, not the longest.
  const Node* n = &trie[0];
  best = std::min(best, n->first.by_tls[over_tls]);
  for (char c : path) {
    if (n->next.empty())
      break;
    auto it =
        std::find_if(n->next.begin(), n->next.end(), [c](const auto& e) { return e.first == c; });
    if (it == n->next.end())
      break;
    n = &trie[it->second];
    best = std::min(best, n->first.by_tls[over_tls]);
  }
  // Only regexes that could still come first are run, and in their order.
  for (const Regex& rx : regexes) {
    if (rx.route >= best)
      break;
    if (rx.only.by_tls[over_tls] != kNone &&
        re2::RE2::FullMatch(re2::StringPiece(path.data(), path.size()), *rx.re)) {
      best = rx.route;
      break;
    }
  }
}

uint32_t RouteIndex::find(bool over_tls, std::string_view authority, std::string_view path) const {
  uint32_t best = kNone;
  if (!hosts_.empty() || !wildcards_.empty()) {
    thread_local std::string host;
    http::assign_lower(host, http::host_of(authority));
    if (auto it = hosts_.find(host); it != hosts_.end())
      it->second.find(over_tls, path, best);
    // "*.example.com" takes "a.example.com" and "a.b.example.com", never "example.com": each
    // dot after the first byte starts a suffix that such a pattern may name.
    if (!wildcards_.empty())
      for (size_t dot = host.find('.', 1); dot != std::string::npos; dot = host.find('.', dot + 1))
        if (auto it = wildcards_.find(std::string_view(host).substr(dot)); it != wildcards_.end())
          it->second.find(over_tls, path, best);
  }
  any_host_.find(over_tls, path, best);
  return best;
}

} // namespace portico::routing
