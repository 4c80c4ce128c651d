#include "cache/cache_control.h"

#include <gtest/gtest.h>
#include <vector>

namespace portico::cache {
namespace {

CacheControl parse(std::vector<http::Header> fields) {
  return parse_cache_control(fields, "cache-control");
}

TEST(CacheControl, ReadsEveryLineAndTheFirstOccurrenceCounts) {
  auto cc = parse({{"cache-control", "max-age=60, must-revalidate"},
                   {"x-other", "max-age=1"},
                   {"cache-control", "max-age=5, s-maxage=30, public"}});
  EXPECT_TRUE(cc.present);
  EXPECT_EQ(cc.max_age, 60);
  EXPECT_EQ(cc.s_maxage, 30);
  EXPECT_TRUE(cc.must_revalidate);
  EXPECT_TRUE(cc.public_);
  EXPECT_FALSE(parse({}).present);
}

TEST(CacheControl, NamesAreCaseInsensitiveAndQuotedValuesAccepted) {
  auto cc = parse({{"cache-control", "MaX-AgE=\"3600\", No-CaChE"}});
  EXPECT_EQ(cc.max_age, 3600);
  EXPECT_TRUE(cc.no_cache);
}

TEST(CacheControl, AValueThatIsNoDeltaSecondsIsInvalidAndMisspeltDirectivesAreIgnored) {
  for (const char* v : {"max-age=3600.0", "max-age=-1", "max-age=a100", "max-age=100a",
                        "max-age='3600'", "max-age="})
    EXPECT_EQ(parse({{"cache-control", v}}).max_age, CacheControl::kInvalid) << v;
  for (const char* v : {"max-age =3600", "max-age= 3600"})
    EXPECT_EQ(parse({{"cache-control", v}}).max_age, CacheControl::kAbsent) << v;
}

TEST(CacheControl, HugeValuesAreCappedAt2147483648) {
  EXPECT_EQ(parse({{"cache-control", "max-age=99999999999999999999999"}}).max_age,
            CacheControl::kMaxDelta);
  EXPECT_EQ(parse_delta_seconds("2147483647"), 2147483647);
  EXPECT_EQ(parse_delta_seconds(""), -1);
}

TEST(CacheControl, CommasInsideQuotesDoNotSplitDirectives) {
  auto cc = parse({{"cache-control", "foo=\"max-age=8, no-store\", max-age=10"}});
  EXPECT_FALSE(cc.no_store);
  EXPECT_EQ(cc.max_age, 10);
  auto q = parse({{"cache-control", "no-cache=\"Set-Cookie, X-A\", private=\"X-B\""}});
  EXPECT_FALSE(q.no_cache); // qualified: only the listed fields
  EXPECT_EQ(q.no_cache_fields, "Set-Cookie, X-A");
  EXPECT_FALSE(q.private_);
  EXPECT_EQ(q.private_fields, "X-B");
}

TEST(CacheControl, RequestDirectives) {
  auto cc = parse({{"cache-control", "max-stale, min-fresh=5, only-if-cached, no-store"}});
  EXPECT_EQ(cc.max_stale, CacheControl::kAny);
  EXPECT_EQ(cc.min_fresh, 5);
  EXPECT_TRUE(cc.only_if_cached);
  EXPECT_TRUE(cc.no_store);
  EXPECT_EQ(parse({{"cache-control", "max-stale=30"}}).max_stale, 30);
}

} // namespace
} // namespace portico::cache
