#pragma once
// Which route a request takes, at a cost that does not grow with the number of routes: the
// routes are filed by host (exact names hashed, "*.example.com" patterns hashed by their
// suffix, host-less routes apart), and within a host by path (exact paths hashed, prefixes in
// a byte trie, regexes in config order). A lookup visits the buckets the request's host can
// reach (its own name, one per dot of it, and the host-less one) and keeps the lowest route
// index that matches: first match wins, exactly as the linear scan it replaces
// (tests/unit/routing/route_index_test.cc holds the two side by side on random configs).
#include "config/config.h"
#include "core/string_map.h"

#include <cstdint>
#include <memory>
#include <re2/re2.h>
#include <string>
#include <string_view>
#include <vector>

namespace portico::routing {

class RouteIndex {
public:
  static constexpr uint32_t kNone = UINT32_MAX;

  explicit RouteIndex(const std::vector<config::RouteConfig>& routes);
  RouteIndex(const RouteIndex&) = delete;
  RouteIndex& operator=(const RouteIndex&) = delete;
  ~RouteIndex();

  // The first route matching a request (authority as sent, port and all; path as matched,
  // Router::matching_path), or kNone.
  uint32_t find(bool over_tls, std::string_view authority, std::string_view path) const;

private:
  // The first route of a slot for each scheme a request can come by: cleartext, then TLS.
  struct First {
    uint32_t by_tls[2] = {kNone, kNone};
    void add(uint32_t route, const std::string& scheme);
  };
  struct Node {
    First first;                                 // routes whose prefix ends here
    std::vector<std::pair<char, uint32_t>> next; // child nodes by byte
  };
  struct Regex {
    uint32_t route;
    First only; // the route's index under the schemes it takes, kNone under the other
    std::unique_ptr<re2::RE2> re;
  };
  template <typename V> using Map = core::StringMap<V>;
  struct Bucket {
    Map<First> exact;
    std::vector<Node> trie = std::vector<Node>(1); // [0] is the empty prefix
    std::vector<Regex> regexes;
    void add(uint32_t route, const config::RouteConfig& r);
    void find(bool over_tls, std::string_view path, uint32_t& best) const;
  };

  Map<Bucket> hosts_;     // lower-case name
  Map<Bucket> wildcards_; // ".example.com" for "*.example.com"
  Bucket any_host_;
};

} // namespace portico::routing
