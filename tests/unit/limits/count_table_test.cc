#include "limits/count_table.h"

#include <atomic>
#include <gtest/gtest.h>
#include <thread>
#include <vector>

namespace portico::limits {
namespace {

TEST(CountTable, AKeyHoldsAtMostMaxAndGivesBack) {
  CountTable t(64);
  auto a = t.acquire(42, 2), b = t.acquire(42, 2);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a, b); // one slot per key
  EXPECT_FALSE(t.acquire(42, 2));
  EXPECT_EQ(t.count(42), 2u);
  EXPECT_TRUE(t.acquire(43u << 30, 2)); // another key, its own count
  t.release(a);
  EXPECT_TRUE(t.acquire(42, 2));
  t.release(a);
  t.release(b);
  EXPECT_EQ(t.count(42), 0u);
}

TEST(CountTable, AFreeSlotIsReusedAndAFullWindowRefuses) {
  CountTable t(8); // one probe window: eight keys busy at once at most
  std::vector<CountTable::Ticket> held;
  for (uint64_t k = 1; k <= 8; ++k)
    held.push_back(t.acquire(k << 32, 1));
  for (auto h : held)
    ASSERT_TRUE(h);
  EXPECT_FALSE(t.acquire(99ull << 32, 1)); // no room: refused, as nginx's full zone
  t.release(held[3]);
  EXPECT_TRUE(t.acquire(99ull << 32, 1)); // a slot whose count went to 0 is free
}

TEST(CountTable, TwoThreadsNeverHoldMoreThanMax) {
  CountTable t(1024);
  std::atomic<int> held{0}, most{0};
  auto work = [&] {
    for (int i = 0; i < 20000; ++i) {
      auto ticket = t.acquire(7, 3);
      if (!ticket)
        continue;
      int now = ++held;
      int m = most.load();
      while (now > m && !most.compare_exchange_weak(m, now)) {
      }
      --held;
      t.release(ticket);
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_EQ(t.count(7), 0u);
}

TEST(CountTable, ANewKeyTakenByTwoThreadsAtOnceEndsInOneSlot) {
  for (int round = 0; round < 200; ++round) {
    CountTable t(64);
    uint64_t key = 0x1234567890ull + static_cast<uint64_t>(round);
    CountTable::Ticket x = nullptr, y = nullptr;
    std::thread a([&] { x = t.acquire(key, 10); }), b([&] { y = t.acquire(key, 10); });
    a.join();
    b.join();
    ASSERT_EQ(x, y);
    EXPECT_EQ(t.count(key), 2u);
  }
}

TEST(CountTable, ASlotFreedBeforeAKeysOwnDoesNotGiveTheKeyASecond) {
  // The key's slot is the sixth of its window; the third frees while the key holds it: the
  // key's next request still counts in its own slot, never in a second one.
  CountTable t(8);
  std::vector<CountTable::Ticket> others;
  for (uint64_t k = 1; k <= 5; ++k)
    others.push_back(t.acquire(k << 32, 1));
  auto first = t.acquire(77ull << 32, 2);
  ASSERT_TRUE(first);
  t.release(others[2]);
  auto second = t.acquire(77ull << 32, 2);
  EXPECT_EQ(second, first);
  EXPECT_FALSE(t.acquire(77ull << 32, 2)); // two in flight: the max
}

} // namespace
} // namespace portico::limits
