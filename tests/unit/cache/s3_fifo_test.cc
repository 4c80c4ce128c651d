// S3-FIFO keeps to its byte budget, keeps what is read again through a scan that plain LRU would
// let flush it, and lets a key it dropped a moment ago come back straight to the main FIFO.
#include "cache/s3_fifo.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace portico::cache {
namespace {

std::string key(int i) {
  return "k" + std::to_string(i);
}

TEST(S3Fifo, KeepsToItsBudgetAndReportsEvictions) {
  std::vector<std::string> evicted;
  S3Fifo<int> c(1000, [&](const std::string& k, int&) { evicted.push_back(k); });
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(c.insert(key(i), i, 100));
    EXPECT_LE(c.used_bytes(), 1000u);
  }
  EXPECT_EQ(c.size(), 10u);
  EXPECT_EQ(evicted.size(), 90u);
  EXPECT_EQ(*c.find(key(99)), 99);
  EXPECT_EQ(c.find(key(0)), nullptr);
  EXPECT_FALSE(c.insert("huge", 1, 1001)); // could never fit: nothing evicted for it
  EXPECT_EQ(c.size(), 10u);
}

TEST(S3Fifo, ReplacingAndErasingKeepTheAccountsRight) {
  S3Fifo<int> c(1000);
  c.insert("a", 1, 300);
  c.insert("a", 2, 500);
  EXPECT_EQ(c.used_bytes(), 500u);
  EXPECT_EQ(*c.find("a"), 2);
  EXPECT_TRUE(c.erase("a"));
  EXPECT_FALSE(c.erase("a"));
  EXPECT_EQ(c.used_bytes(), 0u);
  // Stale places of erased or replaced keys never evict the entry stored since.
  for (int round = 0; round < 50; ++round) {
    c.insert("a", round, 100);
    c.erase("a");
    c.insert("a", round, 100);
    for (int i = 0; i < 20; ++i)
      c.insert(key(i), i, 100);
    EXPECT_LE(c.used_bytes(), 1000u);
  }
}

TEST(S3Fifo, AWorkingSetSurvivesAScan) {
  S3Fifo<int> c(100 * 100); // 100 objects of 100 bytes
  for (int i = 0; i < 50; ++i)
    c.insert(key(i), i, 100);
  for (int pass = 0; pass < 3; ++pass) // the working set is read again and again
    for (int i = 0; i < 50; ++i)
      ASSERT_NE(c.find(key(i)), nullptr) << i;
  for (int i = 1000; i < 11000; ++i) { // a scan of 10,000 keys read once
    c.insert(key(i), i, 100);
    if (i % 100 == 0)
      for (int j = 0; j < 50; ++j)
        c.find(key(j)); // the working set is still in use meanwhile
  }
  int kept = 0;
  for (int i = 0; i < 50; ++i)
    kept += c.find(key(i)) != nullptr;
  EXPECT_EQ(kept, 50); // plain LRU keeps none: 100 scanned keys pass between its reads
}

TEST(S3Fifo, AKeyBackSoonAfterItsEvictionGoesToMain) {
  S3Fifo<int> c(100 * 100);
  c.insert("again", 1, 100);
  for (int i = 0; i < 120; ++i) // "again" leaves the small FIFO unread: dropped, remembered
    c.insert(key(i), i, 100);
  ASSERT_EQ(c.find("again"), nullptr);
  c.insert("again", 2, 100);
  for (int i = 100; i < 160; ++i) // more than the small FIFO holds, less than main
    c.insert(key(i), i, 100);
  EXPECT_NE(c.find("again"), nullptr);
}

} // namespace
} // namespace portico::cache
