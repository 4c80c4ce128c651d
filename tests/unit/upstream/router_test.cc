#include "tls/tls_context.h"
#include "upstream/cluster.h"
#include "upstream/router.h"
#include "upstream/upstream_endpoint.h"

#include <gtest/gtest.h>

namespace portico::upstream {
namespace {

TEST(Router, HostPatterns) {
  EXPECT_TRUE(Router::host_matches("", "anything"));
  EXPECT_TRUE(Router::host_matches("example.com", "EXAMPLE.com:8443"));
  EXPECT_FALSE(Router::host_matches("example.com", "www.example.com"));
  EXPECT_TRUE(Router::host_matches("*.example.com", "a.b.example.com"));
  EXPECT_FALSE(Router::host_matches("*.example.com", "example.com"));
  EXPECT_TRUE(Router::host_matches("[::1]", "[::1]:80"));
}

TEST(Router, MatchingPathResolvesWhatTheUpstreamWould) {
  std::string scratch;
  auto m = [&](std::string_view p) { return std::string(Router::matching_path(p, scratch)); };
  EXPECT_EQ(m("/a/b"), "/a/b");
  EXPECT_EQ(m("/public/../admin"), "/admin");
  EXPECT_EQ(m("/public/%2e%2E/admin"), "/admin");
  EXPECT_EQ(m("/a/./b//c"), "/a/b/c");
  EXPECT_EQ(m("/../../etc"), "/etc");
  EXPECT_EQ(m("/a/b/"), "/a/b/");
  EXPECT_EQ(m("/a/.."), "/");
  EXPECT_EQ(m("/%41"), "/%41"); // only an encoded dot is decoded
}

TEST(Cluster, ConnectionLimitShares) {
  EXPECT_EQ(Cluster::share(0, 0, 4), 0);
  EXPECT_EQ(Cluster::share(4, 0, 2) + Cluster::share(4, 1, 2), 4);
  EXPECT_EQ(Cluster::share(5, 0, 2) + Cluster::share(5, 1, 2), 5);
  EXPECT_EQ(Cluster::share(1, 1, 2), 1); // never zero: a worker must be able to send at all
}

TEST(Endpoint, Parse) {
  auto u = parse_endpoint("unix:/run/app.sock");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->is_unix);
  EXPECT_TRUE(literal_address(*u));
  auto t = parse_endpoint("[::1]:9000");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->numeric);
  EXPECT_EQ(t->port, 9000);
  auto n = parse_endpoint("backend.internal:80");
  ASSERT_TRUE(n);
  EXPECT_FALSE(n->numeric);
  EXPECT_FALSE(literal_address(*n));
  EXPECT_FALSE(parse_endpoint("host:0"));
  EXPECT_FALSE(parse_endpoint("unix:relative"));
  EXPECT_FALSE(parse_endpoint("noport"));
}

TEST(TlsContext, SniNames) {
  EXPECT_TRUE(tls::TlsContext::name_matches("example.com", "Example.COM"));
  EXPECT_TRUE(tls::TlsContext::name_matches("*.example.com", "www.example.com"));
  EXPECT_FALSE(tls::TlsContext::name_matches("*.example.com", "a.b.example.com"));
  EXPECT_FALSE(tls::TlsContext::name_matches("*.example.com", "example.com"));
}

} // namespace
} // namespace portico::upstream
