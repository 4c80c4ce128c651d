// A forward auth's remembered allowances: found while fresh, gone once expired, and never more
// than the size asked for (the oldest goes first), whatever keys come.
#include "filters/auth_decision_cache.h"

#include <gtest/gtest.h>

namespace portico::filters {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(AuthDecisionCache, AnAllowanceIsFoundWhileFresh) {
  AuthDecisionCache c(5, 100);
  c.remember("q", {{"x-user", "alice"}}, 0);
  const auto* f = c.find("q", 4 * kSecond);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ((*f)[0].second, "alice");
  EXPECT_EQ(c.find("q", 5 * kSecond), nullptr);
  EXPECT_EQ(c.find("other", 0), nullptr);
}

TEST(AuthDecisionCache, AFloodOfKeysStaysWithinItsSize) {
  AuthDecisionCache c(60, 64);
  for (int i = 0; i < 10000; ++i)
    c.remember("k" + std::to_string(i), {}, i);
  EXPECT_LE(c.size(), 64u);
  EXPECT_TRUE(c.find("k9999", 10000)); // the newest stay
  EXPECT_FALSE(c.find("k0", 10000));   // the oldest went
}

TEST(AuthDecisionCache, ExpiredOnesGoBeforeFreshOnes) {
  AuthDecisionCache c(1, 3);
  c.remember("a", {}, 0);
  c.remember("b", {}, 0);
  c.remember("c", {}, 2 * kSecond); // a and b have expired: they make room
  c.remember("d", {}, 2 * kSecond);
  EXPECT_TRUE(c.find("c", 2 * kSecond));
  EXPECT_TRUE(c.find("d", 2 * kSecond));
  EXPECT_LE(c.size(), 3u);
}

} // namespace
} // namespace portico::filters
