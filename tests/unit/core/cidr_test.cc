// parse_cidr / in_any: [server] trusted_proxies.
#include "core/cidr.h"

#include <gtest/gtest.h>

#include <vector>

namespace portico::core {
namespace {

std::vector<Cidr> ranges(std::initializer_list<const char*> texts) {
  std::vector<Cidr> out;
  for (const char* t : texts) {
    auto c = parse_cidr(t);
    EXPECT_TRUE(c) << t;
    if (c)
      out.push_back(*c);
  }
  return out;
}

TEST(Cidr, Parses) {
  for (const char* bad : {"", "10.0.0.0/", "10.0.0.0/33", "::/129", "10.0.0/8", "10.0.0.0/-1",
                          "10.0.0.0/8x", "example.com", "10.0.0.0 /8", "1.2.3.4/08x"})
    EXPECT_FALSE(parse_cidr(bad)) << bad;
  EXPECT_EQ(parse_cidr("10.0.0.0/8")->prefix, 8);
  EXPECT_EQ(parse_cidr("192.0.2.1")->prefix, 32);
  EXPECT_EQ(parse_cidr("2001:db8::/32")->prefix, 32);
  EXPECT_TRUE(parse_cidr("2001:db8::/32")->v6);
}

TEST(Cidr, Matches) {
  auto r = ranges({"10.0.0.0/8", "192.168.1.128/25", "2001:db8::/32", "127.0.0.1"});
  EXPECT_TRUE(in_any(r, "10.255.1.2"));
  EXPECT_FALSE(in_any(r, "11.0.0.1"));
  EXPECT_TRUE(in_any(r, "192.168.1.200"));
  EXPECT_FALSE(in_any(r, "192.168.1.127"));
  EXPECT_TRUE(in_any(r, "2001:db8:1::5"));
  EXPECT_FALSE(in_any(r, "2001:db9::5"));
  EXPECT_TRUE(in_any(r, "127.0.0.1"));
  EXPECT_FALSE(in_any(r, "127.0.0.2"));
  EXPECT_TRUE(in_any(r, "::ffff:10.1.2.3")); // IPv4-mapped
  EXPECT_FALSE(in_any(r, "unix"));
  EXPECT_FALSE(in_any(r, ""));
  EXPECT_FALSE(in_any({}, "10.0.0.1"));
  EXPECT_TRUE(in_any(ranges({"0.0.0.0/0"}), "8.8.8.8"));
  EXPECT_FALSE(in_any(ranges({"0.0.0.0/0"}), "::1"));
}

} // namespace
} // namespace portico::core
