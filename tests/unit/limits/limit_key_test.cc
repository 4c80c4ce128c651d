#include "limits/limit_key.h"

#include <gtest/gtest.h>

namespace portico::limits {
namespace {

http::RequestHead request(std::vector<http::Header> headers) {
  http::RequestHead r;
  r.method = "GET";
  r.target = "/";
  r.headers = std::move(headers);
  return r;
}

TEST(LimitKey, PartsAreParsedAndOthersRefused) {
  EXPECT_EQ(parse_key_part("client")->kind, KeyPart::CLIENT);
  EXPECT_EQ(parse_key_part("route")->kind, KeyPart::ROUTE);
  auto h = parse_key_part("header:X-Api-Key");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, KeyPart::HEADER);
  EXPECT_EQ(h->name, "x-api-key");
  EXPECT_EQ(parse_key_part("cookie:Session")->name, "Session"); // cookie names keep their case
  for (auto bad : {"", "host", "header:", "cookie:a b", "header:a;b"})
    EXPECT_FALSE(parse_key_part(bad)) << bad;
}

TEST(LimitKey, AKeyJoinsItsPartsAndAMissingPartMeansNotCounted) {
  std::vector<KeyPart> parts = {*parse_key_part("client"), *parse_key_part("header:x-api-key"),
                                *parse_key_part("cookie:sid")};
  std::string key;
  auto req = request({{"x-api-key", "k1"}, {"cookie", "a=1; sid=s9"}});
  ASSERT_TRUE(build_key(parts, req, "192.0.2.1", "api", key));
  EXPECT_EQ(key, std::string("192.0.2.1\0k1\0s9\0", 16));
  EXPECT_FALSE(build_key(parts, request({{"x-api-key", "k1"}}), "192.0.2.1", "api", key));
  EXPECT_FALSE(
      build_key(parts, request({{"x-api-key", ""}, {"cookie", "sid=1"}}), "192.0.2.1", "api", key));
}

TEST(LimitKey, CookiesAreFoundInEveryCookieField) {
  auto req = request({{"cookie", "a=1"}, {"cookie", " b=2 ;sid=xyz"}});
  EXPECT_EQ(cookie_value(req, "sid"), "xyz");
  EXPECT_EQ(cookie_value(req, "a"), "1");
  EXPECT_EQ(cookie_value(req, "si"), "");
}

} // namespace
} // namespace portico::limits
