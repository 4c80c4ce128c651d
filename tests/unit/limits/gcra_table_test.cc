#include "limits/gcra_table.h"

#include <gtest/gtest.h>
#include <thread>
#include <vector>

namespace portico::limits {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(GcraTable, WithoutABurstOneRequestPerInterval) {
  GcraTable t(64);
  EXPECT_TRUE(t.take(7, 0, kSecond, 0).allowed);
  auto refused = t.take(7, 0, kSecond, 0);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.ahead_ns, kSecond); // one second until the next would pass
  EXPECT_FALSE(t.take(7, kSecond - 1, kSecond, 0).allowed);
  EXPECT_TRUE(t.take(7, kSecond, kSecond, 0).allowed);
  EXPECT_TRUE(t.take(8, 0, kSecond, 0).allowed); // another key, its own rate
}

TEST(GcraTable, ABurstPassesAtOnceThenTheRateHolds) {
  GcraTable t(64);
  for (int i = 0; i <= 5; ++i) {
    auto d = t.take(1, 0, kSecond / 10, 5);
    ASSERT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.remaining, 5 - i);
    EXPECT_EQ(d.ahead_ns, i * kSecond / 10); // how far ahead of the rate: a queue's wait
  }
  EXPECT_FALSE(t.take(1, 0, kSecond / 10, 5).allowed);
  EXPECT_TRUE(t.take(1, kSecond / 10, kSecond / 10, 5).allowed); // one drained
  EXPECT_FALSE(t.take(1, kSecond / 10, kSecond / 10, 5).allowed);
}

TEST(GcraTable, AtThreeTimesTheRateTheAcceptedCountIsRateTimesTimePlusBurst) {
  GcraTable t(64);
  const int64_t interval = kSecond / 100; // 100 r/s
  int accepted = 0;
  for (int64_t now = 0; now < 10 * kSecond; now += kSecond / 300)
    accepted += t.take(3, now, interval, 10).allowed;
  EXPECT_NEAR(accepted, 100 * 10 + 10, 2);
}

TEST(GcraTable, TwoThreadsOnOneKeyNeverPassMoreThanTheBurst) {
  GcraTable t(64);
  std::atomic<int> accepted{0};
  auto hammer = [&] {
    for (int i = 0; i < 5000; ++i)
      accepted += t.take(9, 0, kSecond, 1000).allowed;
  };
  std::thread a(hammer), b(hammer);
  a.join();
  b.join();
  EXPECT_EQ(accepted.load(), 1001);
}

TEST(GcraTable, AMillionKeysStayInTheTableAndIdleOnesAreReusedFirst) {
  GcraTable t(1024);
  EXPECT_EQ(t.slots(), 1024u);
  int evicted = 0;
  // Keys that each spent their bucket long ago hold nothing: their slots are taken freely.
  for (uint64_t k = 1; k <= 1'000'000; ++k)
    evicted +=
        t.take(k * 0x9E3779B97F4A7C15ull, static_cast<int64_t>(k) * kSecond, kSecond, 0).evicted;
  EXPECT_EQ(evicted, 0);
  // Keys all still limited at once, more of them than slots: some give way, counted.
  for (uint64_t k = 1; k <= 100'000; ++k)
    evicted += t.take(k * 0x51ED27A3F1E5D3C9ull, 0, 3600 * kSecond, 0).evicted;
  EXPECT_GT(evicted, 90'000);
  EXPECT_EQ(t.slots(), 1024u);
}

TEST(GcraTable, ALimitCalledByTheSameNameIsTheSameTable) {
  auto a = GcraTable::named("gcra-test", 256);
  auto b = GcraTable::named("gcra-test", 256);
  EXPECT_EQ(a, b);
  EXPECT_NE(GcraTable::named("gcra-test", 4096), a); // another size: a new table
}

} // namespace
} // namespace portico::limits
