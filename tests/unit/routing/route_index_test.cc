// RouteIndex against the linear first-match scan it replaced, on random configurations and
// requests: hosts exact, wildcard and absent, in mixed case; paths by prefix, exact and regex,
// with shared prefixes; schemes; duplicates of one match at several indexes.
#include "routing/route_index.h"

#include "routing/router.h"

#include <gtest/gtest.h>
#include <random>

namespace portico::routing {
namespace {

// The router's loop before RouteIndex, kept here as the definition of first match.
uint32_t linear_find(const std::vector<config::RouteConfig>& routes,
                     const std::vector<std::unique_ptr<re2::RE2>>& regexes, bool over_tls,
                     std::string_view authority, std::string_view path) {
  for (size_t i = 0; i < routes.size(); ++i) {
    const auto& r = routes[i];
    if (!r.scheme.empty() && (r.scheme == "https") != over_tls)
      continue;
    if (!Router::host_matches(r.host, authority))
      continue;
    bool match = !r.path_exact.empty() ? path == r.path_exact
                 : regexes[i]
                     ? re2::RE2::FullMatch(re2::StringPiece(path.data(), path.size()), *regexes[i])
                     : path.starts_with(r.path_prefix);
    if (match)
      return static_cast<uint32_t>(i);
  }
  return RouteIndex::kNone;
}

template <typename T> const T& pick(std::mt19937& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

const std::vector<std::string> kHostPatterns = {
    "",          "",        "a.example", "A.Example", "b.a.example",   "*.example",  "*.a.example",
    "*.EXAMPLE", "example", "*.",        "[::1]",     "x.y.z.example", "*.z.example"};
const std::vector<std::string> kAuthorities = {
    "a.example", "A.EXAMPLE:8080", "b.a.example",   "c.b.a.example",
    "example",   "other",          "x.y.z.example", "z.example",
    "host.",     ".example",       "[::1]:443",     "[::1]",
    "",          "a.example."};
const std::vector<std::string> kPaths = {"/",      "/a",        "/a/",    "/a/b",
                                         "/ab",    "/api/v1/x", "/api",   "/apiary",
                                         "/b/c/d", "/ping",     "/v12/x", "/static/x.css"};
const std::vector<std::string> kPrefixes = {"/",     "/a",      "/a/", "/a/b",  "/api",
                                            "/api/", "/api/v1", "/b",  "/ping", "/static/"};
const std::vector<std::string> kExacts = {"/", "/a", "/ping", "/api", "/a/b"};
const std::vector<std::string> kRegexes = {"/v[0-9]+/.*", "/a.*", ".*", "/api/v[12]/x", "/(a|b)/?"};
const std::vector<std::string> kSchemes = {"", "", "", "http", "https"};

std::vector<config::RouteConfig> random_routes(std::mt19937& rng, size_t n) {
  std::vector<config::RouteConfig> routes(n);
  for (auto& r : routes) {
    r.host = pick(rng, kHostPatterns);
    r.scheme = pick(rng, kSchemes);
    r.path_prefix.clear();
    switch (rng() % 4) {
    case 0: r.path_exact = pick(rng, kExacts); break;
    case 1: r.path_regex = pick(rng, kRegexes); break;
    default: r.path_prefix = pick(rng, kPrefixes); break;
    }
  }
  return routes;
}

TEST(RouteIndex, FindsWhatTheLinearScanFinds) {
  std::mt19937 rng(20261203);
  size_t found = 0, checked = 0;
  for (int config = 0; config < 400; ++config) {
    auto routes = random_routes(rng, 1 + rng() % 24);
    std::vector<std::unique_ptr<re2::RE2>> regexes;
    for (const auto& r : routes)
      regexes.push_back(r.path_regex.empty() ? nullptr : std::make_unique<re2::RE2>(r.path_regex));
    RouteIndex index(routes);
    for (const auto& authority : kAuthorities)
      for (const auto& path : kPaths)
        for (bool tls : {false, true}) {
          uint32_t want = linear_find(routes, regexes, tls, authority, path);
          ASSERT_EQ(index.find(tls, authority, path), want)
              << "config " << config << ": " << (tls ? "https://" : "http://") << authority << path;
          found += want != RouteIndex::kNone;
          ++checked;
        }
  }
  // Both outcomes were exercised, and often.
  EXPECT_GT(found, checked / 4);
  EXPECT_LT(found, checked - checked / 10);
}

TEST(RouteIndex, LowestIndexAmongPrefixesNotLongest) {
  std::vector<config::RouteConfig> routes(2);
  routes[0].path_prefix = "/a";
  routes[1].path_prefix = "/a/b";
  RouteIndex index(routes);
  EXPECT_EQ(index.find(false, "h", "/a/b/c"), 0u);
}

TEST(RouteIndex, TenThousandHosts) {
  std::vector<config::RouteConfig> routes(10000);
  for (size_t i = 0; i < routes.size(); ++i)
    routes[i].host = "h" + std::to_string(i) + ".example";
  RouteIndex index(routes);
  EXPECT_EQ(index.find(false, "h9999.example", "/x"), 9999u);
  EXPECT_EQ(index.find(true, "H17.EXAMPLE:443", "/"), 17u);
  EXPECT_EQ(index.find(false, "h10000.example", "/"), RouteIndex::kNone);
}

} // namespace
} // namespace portico::routing
