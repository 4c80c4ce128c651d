#include "cache/freshness.h"

#include <gtest/gtest.h>
#include <vector>

namespace portico::cache {
namespace {

// Sun, 06 Nov 1994 08:49:37 GMT
constexpr time_t kT = 784111777;

Freshness of(int status, std::vector<http::Header> fields, std::string_view date = "",
             time_t request = kT, time_t response = kT) {
  FreshnessPolicy policy;
  return freshness_of(status, parse_cache_control(fields, "cache-control"), fields, date, request,
                      response, policy);
}

TEST(Freshness, SMaxAgeThenMaxAgeThenExpires) {
  EXPECT_EQ(of(200, {{"cache-control", "max-age=60, s-maxage=10"}}).lifetime, 10);
  EXPECT_EQ(of(200, {{"cache-control", "max-age=60"}, {"expires", "0"}}).lifetime, 60);
  auto f = of(200, {{"expires", "Sun, 06 Nov 1994 08:50:37 GMT"}}, "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(f.lifetime, 60);
  EXPECT_EQ(of(200, {{"expires", "0"}}).lifetime, 0); // invalid: in the past
  EXPECT_TRUE(of(200, {{"cache-control", "s-maxage=5"}}).no_stale);
}

TEST(Freshness, AgeIsTheLargerOfApparentAndCorrectedAndGrowsWhileStored) {
  // Date a minute before it arrived; Age 10 plus a 2 s round trip
  auto f = of(200, {{"cache-control", "max-age=3600"}, {"age", "10"}},
              "Sun, 06 Nov 1994 08:48:37 GMT", kT - 2, kT);
  EXPECT_EQ(f.initial_age, 60);
  EXPECT_EQ(f.age(kT + 100), 160);
  EXPECT_EQ(f.ttl(kT + 100), 3600 - 160);
  auto g = of(200, {{"cache-control", "max-age=3600"}, {"age", "100"}}, "", kT - 2, kT);
  EXPECT_EQ(g.initial_age, 102);
}

TEST(Freshness, AgeUsesTheFirstMemberAndAnUnreadableOneMakesItStale) {
  EXPECT_EQ(of(200, {{"cache-control", "max-age=3600"}, {"age", "0, 7200"}}).initial_age, 0);
  EXPECT_EQ(of(200, {{"cache-control", "max-age=3600"}, {"age", "7200"}, {"age", "0"}}).initial_age,
            7200);
  for (const char* bad : {"abc", "-5", "1.5", "7200;foo=bar"})
    EXPECT_TRUE(of(200, {{"cache-control", "max-age=3600"}, {"age", bad}}).never_fresh) << bad;
  auto huge = of(200, {{"cache-control", "max-age=60"}, {"age", "999999999999999999999"}});
  EXPECT_LE(huge.ttl(kT), 0);
}

TEST(Freshness, HeuristicOnlyForHeuristicallyCacheableStatusesAndBounded) {
  std::vector<http::Header> lm{{"last-modified", "Sat, 05 Nov 1994 08:49:37 GMT"}};
  auto f = of(200, lm, "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_TRUE(f.heuristic);
  EXPECT_EQ(f.lifetime, 8640); // a tenth of a day
  EXPECT_EQ(of(503, lm, "Sun, 06 Nov 1994 08:49:37 GMT").lifetime, 0);
  std::vector<http::Header> old{{"last-modified", "Thu, 01 Jan 1970 00:00:00 GMT"}};
  EXPECT_EQ(of(200, old, "Sun, 06 Nov 1994 08:49:37 GMT").lifetime, 86400);
}

TEST(Freshness, WhatARequestAllows) {
  auto f = of(200, {{"cache-control", "max-age=100"}});
  auto req = [](const char* v) {
    std::vector<http::Header> h{{"cache-control", v}};
    return parse_cache_control(h, "cache-control");
  };
  EXPECT_EQ(reuse_of(f, req(""), kT + 50), Reuse::FRESH);
  EXPECT_EQ(reuse_of(f, req("max-age=10"), kT + 50), Reuse::REVALIDATE);
  EXPECT_EQ(reuse_of(f, req("min-fresh=60"), kT + 50), Reuse::REVALIDATE);
  EXPECT_EQ(reuse_of(f, req("no-cache"), kT + 50), Reuse::REVALIDATE);
  EXPECT_EQ(reuse_of(f, req(""), kT + 150), Reuse::REVALIDATE);
  EXPECT_EQ(reuse_of(f, req("max-stale=60"), kT + 150), Reuse::STALE_OK);
  EXPECT_EQ(reuse_of(f, req("max-stale=10"), kT + 150), Reuse::REVALIDATE);
  auto strict = of(200, {{"cache-control", "max-age=100, must-revalidate"}});
  EXPECT_EQ(reuse_of(strict, req("max-stale"), kT + 150), Reuse::REVALIDATE);
  auto nc = of(200, {{"cache-control", "max-age=100, no-cache"}});
  EXPECT_EQ(reuse_of(nc, req(""), kT + 1), Reuse::REVALIDATE);
}

} // namespace
} // namespace portico::cache
