#include "routing/real_client.h"

#include <gtest/gtest.h>

namespace portico::routing {
namespace {

http::RequestHead with_xff(std::vector<std::string_view> values) {
  http::RequestHead r;
  for (auto v : values)
    r.headers.push_back({"x-forwarded-for", v});
  return r;
}

std::vector<core::Cidr> trusted(std::initializer_list<const char*> ranges) {
  std::vector<core::Cidr> out;
  for (auto r : ranges)
    out.push_back(*core::parse_cidr(r));
  return out;
}

TEST(RealClient, AnUntrustedPeerIsTheClientWhateverItClaims) {
  auto req = with_xff({"203.0.113.9"});
  EXPECT_EQ(real_client("198.51.100.7", req, trusted({"10.0.0.0/8"})), "198.51.100.7");
  EXPECT_EQ(real_client("10.0.0.1", req, {}), "10.0.0.1");
}

TEST(RealClient, TrustedHopsAreReadFromTheRight) {
  auto t = trusted({"10.0.0.0/8"});
  // The client may prepend anything; only what trusted hops added counts.
  auto req = with_xff({"1.1.1.1, 203.0.113.9", "10.0.0.5"});
  EXPECT_EQ(real_client("10.0.0.1", req, t), "203.0.113.9");
  EXPECT_EQ(real_client("10.0.0.1", with_xff({"10.0.0.9, 10.0.0.5"}), t), "10.0.0.9");
  EXPECT_EQ(real_client("10.0.0.1", with_xff({}), t), "10.0.0.1");
  // Not an address: the last hop a trusted proxy vouched for stands.
  EXPECT_EQ(real_client("10.0.0.1", with_xff({"203.0.113.9, junk, 10.0.0.5"}), t), "10.0.0.5");
  EXPECT_EQ(real_client("10.0.0.1", with_xff({"2001:db8::1"}), t), "2001:db8::1");
}

} // namespace
} // namespace portico::routing
