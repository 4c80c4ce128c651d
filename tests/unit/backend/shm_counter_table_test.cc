// ShmCounterTable: counts in a shared mapping, incremented from forked workers without locks.
#include "shm_counter_table.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace portico::backend {
namespace {

// The new count, or the error, as text: a failing EXPECT_EQ then prints which it was.
std::string incr(ShmCounterTable& t, std::string_view key) {
  auto v = t.increment(key);
  return v ? std::to_string(*v) : "error: " + v.error();
}

TEST(ShmCounterTable, Increments) {
  ShmCounterTable t(64);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.get("a"), 0u);
  EXPECT_EQ(incr(t, "a"), "1");
  EXPECT_EQ(incr(t, "a"), "2");
  EXPECT_EQ(incr(t, "b"), "1");
  EXPECT_EQ(incr(t, "a"), "3");
  EXPECT_EQ(t.get("a"), 3u);
  EXPECT_EQ(t.get("b"), 1u);
  EXPECT_EQ(t.get("c"), 0u);
  // Keys are compared whole: a prefix is another key.
  EXPECT_EQ(incr(t, "ab"), "1");
  EXPECT_EQ(t.get("a"), 3u);
  EXPECT_EQ(incr(t, ""), "1");
  EXPECT_EQ(t.get(""), 1u);
}

TEST(ShmCounterTable, KeyLength) {
  ShmCounterTable t(64);
  std::string longest(ShmCounterTable::kMaxKey, 'k');
  EXPECT_EQ(incr(t, longest), "1");
  EXPECT_EQ(incr(t, longest), "2");
  EXPECT_EQ(t.get(longest), 2u);
  std::string too_long(ShmCounterTable::kMaxKey + 1, 'k');
  EXPECT_EQ(incr(t, too_long), "error: counter key too long");
  EXPECT_EQ(t.get(too_long), 0u);
  // The refused key did not touch its 48-byte prefix.
  EXPECT_EQ(t.get(longest), 2u);
}

TEST(ShmCounterTable, Full) {
  ShmCounterTable t(4);
  for (const char* k : {"k1", "k2", "k3", "k4"})
    EXPECT_EQ(incr(t, k), "1") << k;
  EXPECT_EQ(incr(t, "k5"), "error: counter table full");
  // A refused key is not half-made: it stays absent and refused.
  EXPECT_EQ(t.get("k5"), 0u);
  EXPECT_EQ(incr(t, "k5"), "error: counter table full");
  // Existing keys still count.
  EXPECT_EQ(incr(t, "k3"), "2");
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
    uint64_t last = 0;
    for (int i = 0; i < kIncrements; ++i) {
      auto v = t.increment("shared");
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
    for (int i = 0; i < kIncrements / 10; ++i)
      for (int k = 0; k < kKeys; ++k)
        if (!t.increment("key-" + std::to_string(k)))
          return false;
    return true;
  }));
  for (int k = 0; k < kKeys; ++k)
    EXPECT_EQ(t.get("key-" + std::to_string(k)), uint64_t{kChildren} * (kIncrements / 10)) << k;
}

TEST(ShmCounterTable, ForkedWorkersWithDistinctKeys) {
  ShmCounterTable t(1024);
  ASSERT_TRUE(in_children(kChildren, [&](int child) {
    std::string key = "worker-" + std::to_string(child);
    for (int i = 0; i < kIncrements; ++i)
      if (auto v = t.increment(key); !v || *v != uint64_t(i + 1))
        return false;
    return true;
  }));
  for (int c = 0; c < kChildren; ++c)
    EXPECT_EQ(t.get("worker-" + std::to_string(c)), uint64_t{kIncrements});
}

} // namespace
} // namespace portico::backend
