// Cluster::share, how a cluster's connection limit is split among the workers, and endpoint
// parsing.
#include "core/endpoint_address.h"
#include "upstream/cluster.h"

#include <gtest/gtest.h>

namespace portico::upstream {
namespace {

TEST(Cluster, ConnectionLimitShares) {
  EXPECT_EQ(Cluster::share(0, 0, 4), 0);
  EXPECT_EQ(Cluster::share(4, 0, 2) + Cluster::share(4, 1, 2), 4);
  EXPECT_EQ(Cluster::share(5, 0, 2) + Cluster::share(5, 1, 2), 5);
  EXPECT_EQ(Cluster::share(1, 1, 2), 1); // never zero: a worker must be able to send at all
}

TEST(Endpoint, Parse) {
  auto u = core::parse_endpoint("unix:/run/app.sock");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->is_unix);
  EXPECT_TRUE(core::literal_address(*u));
  auto t = core::parse_endpoint("[::1]:9000");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->numeric);
  EXPECT_EQ(t->port, 9000);
  auto n = core::parse_endpoint("backend.internal:80");
  ASSERT_TRUE(n);
  EXPECT_FALSE(n->numeric);
  EXPECT_FALSE(core::literal_address(*n));
  EXPECT_FALSE(core::parse_endpoint("host:0"));
  EXPECT_FALSE(core::parse_endpoint("unix:relative"));
  EXPECT_FALSE(core::parse_endpoint("noport"));
}

} // namespace
} // namespace portico::upstream
