// ShmCounterTable: counts in a shared mapping, incremented from forked workers without locks.
#include "shm_counter_table.h"

#include <gtest/gtest.h>

#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace portico::backend {
namespace {

TEST(ShmCounterTable, Increments) {
  ShmCounterTable t(64);
  ASSERT_TRUE(t.ok());
  std::string error;
  EXPECT_EQ(t.get("a"), 0u);
  EXPECT_EQ(t.increment("a", &error), 1u);
  EXPECT_EQ(t.increment("a", &error), 2u);
  EXPECT_EQ(t.increment("b", &error), 1u);
  EXPECT_EQ(t.increment("a", &error), 3u);
  EXPECT_EQ(t.get("a"), 3u);
  EXPECT_EQ(t.get("b"), 1u);
  EXPECT_EQ(t.get("c"), 0u);
  // Keys are compared whole: a prefix is another key.
  EXPECT_EQ(t.increment("ab", &error), 1u);
  EXPECT_EQ(t.get("a"), 3u);
  EXPECT_EQ(t.increment("", &error), 1u);
  EXPECT_EQ(t.get(""), 1u);
}

TEST(ShmCounterTable, KeyLength) {
  ShmCounterTable t(64);
  std::string error;
  std::string longest(ShmCounterTable::kMaxKey, 'k');
  EXPECT_EQ(t.increment(longest, &error), 1u);
  EXPECT_EQ(t.increment(longest, &error), 2u);
  EXPECT_EQ(t.get(longest), 2u);
  std::string too_long(ShmCounterTable::kMaxKey + 1, 'k');
  EXPECT_FALSE(t.increment(too_long, &error).has_value());
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(t.get(too_long), 0u);
  // The refused key did not touch its 48-byte prefix.
  EXPECT_EQ(t.get(longest), 2u);
}

TEST(ShmCounterTable, Full) {
  ShmCounterTable t(4);
  std::string error;
  for (const char* k : {"k1", "k2", "k3", "k4"})
    EXPECT_EQ(t.increment(k, &error), 1u) << k << ": " << error;
  EXPECT_FALSE(t.increment("k5", &error).has_value());
  EXPECT_EQ(error, "counter table full");
  // Existing keys still count.
  EXPECT_EQ(t.increment("k3", &error), 2u);
}

// Runs fn in n forked children; true when every child exited 0.
template <typename Fn> bool in_children(int n, Fn fn) {
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    if (pid == 0)
      ::_exit(fn(i) ? 0 : 1);
    if (pid < 0)
      return false;
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      ok = false;
  }
  return ok;
}

constexpr int kChildren = 4;
constexpr int kIncrements = 10000;

TEST(ShmCounterTable, ForkedWorkersShareOneCount) {
  ShmCounterTable t(1024);
  ASSERT_TRUE(in_children(kChildren, [&](int) {
    std::string error;
    uint64_t last = 0;
    for (int i = 0; i < kIncrements; ++i) {
      auto v = t.increment("shared", &error);
      // Every increment returns a value no other worker saw, so a worker's own values rise.
      if (!v || *v <= last)
        return false;
      last = *v;
    }
    return true;
  }));
  EXPECT_EQ(t.get("shared"), uint64_t{kChildren} * kIncrements);
}

TEST(ShmCounterTable, ForkedWorkersClaimingSlotsAtOnce) {
  // A table with exactly as many slots as keys: the workers race to claim every slot, and
  // each key must still land in one slot only.
  constexpr int kKeys = 8;
  ShmCounterTable t(kKeys);
  ASSERT_TRUE(in_children(kChildren, [&](int) {
    std::string error;
    for (int i = 0; i < kIncrements / 10; ++i)
      for (int k = 0; k < kKeys; ++k)
        if (!t.increment("key-" + std::to_string(k), &error))
          return false;
    return true;
  }));
  for (int k = 0; k < kKeys; ++k)
    EXPECT_EQ(t.get("key-" + std::to_string(k)), uint64_t{kChildren} * (kIncrements / 10)) << k;
}

TEST(ShmCounterTable, ForkedWorkersWithDistinctKeys) {
  ShmCounterTable t(1024);
  ASSERT_TRUE(in_children(kChildren, [&](int child) {
    std::string error;
    std::string key = "worker-" + std::to_string(child);
    for (int i = 0; i < kIncrements; ++i)
      if (t.increment(key, &error) != uint64_t(i + 1))
        return false;
    return true;
  }));
  for (int c = 0; c < kChildren; ++c)
    EXPECT_EQ(t.get("worker-" + std::to_string(c)), uint64_t{kIncrements});
}

} // namespace
} // namespace portico::backend
