// One worker's allowances of shared limits: a key finds its lease again; a slot is taken by
// another key only when it holds nothing worth keeping (or, when every probed slot is busy,
// only an unspent allowance, counted as an eviction); a slot with a request waiting in it is
// never given away.
#include "limits/lease_table.h"

#include <gtest/gtest.h>

namespace portico::limits {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(LeaseTable, AKeyFindsItsLeaseAgain) {
  LeaseTable t(64);
  bool evicted = true;
  Lease* a = t.find(42, 0, evicted);
  ASSERT_TRUE(a);
  EXPECT_FALSE(evicted);
  a->tokens = 5;
  a->expires_ns = kSecond;
  EXPECT_EQ(t.find(42, 1, evicted), a);
  EXPECT_EQ(t.existing(42), a);
  EXPECT_EQ(t.existing(43), nullptr);
  EXPECT_EQ(a->usable(1), 5);
  EXPECT_EQ(a->usable(kSecond), 0); // given up once its lease expires
}

TEST(LeaseTable, ABusySlotIsKeptAndAFreeOneReused) {
  LeaseTable t(8); // every key probes all eight slots
  bool evicted = false;
  int asking = 0;
  for (uint64_t k = 1; k <= 8; ++k) {
    Lease* l = t.find(k, 0, evicted);
    ASSERT_TRUE(l);
    l->asking = &asking; // waiting on Redis: never given away
  }
  EXPECT_EQ(t.find(100, 0, evicted), nullptr); // nowhere to wait: the caller's failure mode
  t.existing(3)->asking = nullptr;
  t.existing(3)->tokens = 4; // an unspent allowance only
  t.existing(3)->expires_ns = kSecond;
  Lease* l = t.find(100, 0, evicted);
  ASSERT_TRUE(l);
  EXPECT_TRUE(evicted); // key 3's allowance was given up for it
  EXPECT_EQ(l->tokens, 0);
  EXPECT_EQ(t.existing(3), nullptr);
  // A slot whose allowance expired holds nothing: taken without an eviction.
  l->expires_ns = kSecond;
  l->tokens = 1;
  Lease* m = t.find(200, 2 * kSecond, evicted);
  EXPECT_EQ(m, l);
  EXPECT_FALSE(evicted);
}

TEST(LeaseTable, ARefusalStillRunningKeepsItsSlot) {
  LeaseTable t(8);
  bool evicted = false;
  int asking = 0;
  for (uint64_t k = 1; k <= 8; ++k) {
    Lease* l = t.find(k, 0, evicted);
    if (k == 5)
      l->empty_until_ns = kSecond;
    else
      l->asking = &asking;
  }
  EXPECT_EQ(t.find(100, 0, evicted), nullptr);
  EXPECT_NE(t.find(100, kSecond, evicted), nullptr); // once it has run out, the slot is free
}

TEST(LeaseTable, ASlotWithAWaiterIsKept) {
  LeaseTable t(8);
  bool evicted = false;
  LeaseWaiter w[8];
  for (uint64_t k = 1; k <= 8; ++k)
    t.find(k, 0, evicted)->waiters.push_back(&w[k - 1]); // each waits for Redis
  EXPECT_EQ(t.find(100, 0, evicted), nullptr);           // none may be given away
  Lease* l = t.existing(5);
  l->waiters.erase(&w[4]); // its client went
  EXPECT_FALSE(l->busy(0));
  Lease* m = t.find(100, 0, evicted);
  EXPECT_EQ(m, l);
  EXPECT_FALSE(evicted);
  EXPECT_TRUE(m->waiters.empty());
}

} // namespace
} // namespace portico::limits
