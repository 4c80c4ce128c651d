#include "routing/router.h"

#include <gtest/gtest.h>

namespace portico::routing {
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

} // namespace
} // namespace portico::routing
