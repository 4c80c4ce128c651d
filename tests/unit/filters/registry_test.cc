// The filter registry: every filter listed once, rate limits first (a refusal costs nothing
// more), then the cache, compression (it compresses what leaves) and gRPC (it must see every
// local reply), and a route pays only for the filters its configuration uses.
#include "filters/registry.h"

#include <gtest/gtest.h>
#include <set>
#include <string>

namespace portico::filters {
namespace {

metrics::WorkerMetrics& shard() {
  static const config::Config cfg;
  static metrics::WorkerMetrics m(cfg, nullptr);
  return m;
}

std::vector<std::string> made_for(const config::RouteConfig* r) {
  std::vector<std::string> names;
  for (const auto& kind : registry())
    if (kind.make(r, shard()))
      names.emplace_back(kind.name);
  return names;
}

TEST(FilterRegistry, EachFilterOnceGrpcFirstThenLimitsThenTheCacheThenCompression) {
  std::set<std::string_view> seen;
  for (const auto& kind : registry())
    EXPECT_TRUE(seen.insert(kind.name).second) << kind.name;
  ASSERT_GE(registry().size(), 6u);
  EXPECT_EQ(registry()[0].name, "grpc"); // sees every local reply, a limit's refusal too
  EXPECT_EQ(registry()[1].name, "rate_limit");
  EXPECT_EQ(registry()[2].name, "concurrency_limit");
  EXPECT_EQ(registry()[3].name, "forward_auth");
  EXPECT_EQ(registry()[4].name, "cache");
  EXPECT_EQ(registry()[5].name, "compress");
}

TEST(FilterRegistry, ARouteGetsOnlyWhatItUses) {
  config::RouteConfig plain;
  EXPECT_EQ(made_for(&plain), std::vector<std::string>{"grpc"});
  EXPECT_EQ(made_for(nullptr), std::vector<std::string>{"grpc"}); // no route matched
  config::RouteConfig r;
  r.timeout = 2;
  r.has_prefix_rewrite = true;
  r.prefix_rewrite = "/";
  r.response_headers_add = {{"x-a", "1"}};
  EXPECT_EQ(made_for(&r), (std::vector<std::string>{"grpc", "route_timeout", "prefix_rewrite",
                                                    "response_headers"}));
}

TEST(FilterRegistry, TheGrpcFilterIsForHttp2Only) {
  auto grpc = registry()[0].make(nullptr, shard());
  ASSERT_TRUE(grpc);
  EXPECT_TRUE(grpc->http2_only()); // an HTTP/1 request on a plain route makes no chain
  config::RouteConfig r;
  r.has_redirect = true;
  for (const auto& kind : registry()) {
    if (kind.name == "redirect") {
      EXPECT_FALSE(kind.make(&r, shard())->http2_only());
    }
  }
}

} // namespace
} // namespace portico::filters
