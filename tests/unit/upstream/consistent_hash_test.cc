// The consistent hashes of lb = "ring_hash" and "maglev" (issue 27, item 6): shares follow the
// weights, and when 1 of 10 endpoints leaves (is down, or is removed) and returns, about 1/10
// of 10,000 keys move. The figures are printed for the closing note.
#include "upstream/hash_ring.h"
#include "upstream/maglev_table.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>
#include <xxhash.h>

namespace portico::upstream {
namespace {

constexpr size_t kKeys = 10000;

std::vector<std::string> ids(size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back("10.0.0." + std::to_string(i + 1) + ":8080");
  return out;
}

std::vector<HashMember> members(const std::vector<std::string>& ids,
                                std::vector<int> weights = {}) {
  std::vector<HashMember> out;
  for (size_t i = 0; i < ids.size(); ++i)
    out.push_back({ids[i], weights.empty() ? 1 : weights[i]});
  return out;
}

uint64_t key_hash(size_t k) {
  std::string key = "user-" + std::to_string(k);
  return XXH64(key.data(), key.size(), 0);
}

// Each key's member's id ("" when none), with `down` not usable.
template <class Table>
std::vector<std::string> assign(const Table& t, const std::vector<std::string>& ids,
                                size_t down = SIZE_MAX) {
  std::vector<std::string> out;
  for (size_t k = 0; k < kKeys; ++k) {
    size_t m = t.find(key_hash(k), [&](size_t i) { return i != down; });
    out.push_back(m < ids.size() ? ids[m] : "");
  }
  return out;
}

size_t moved(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t n = 0;
  for (size_t k = 0; k < a.size(); ++k)
    n += a[k] != b[k];
  return n;
}

template <class Table> void one_of_ten_leaves_and_returns(const char* name) {
  auto all = ids(10);
  Table t;
  t.build(members(all));
  auto before = assign(t, all);
  // Down (ejected, failing its checks): skipped where it stands.
  auto down = assign(t, all, 3);
  size_t moved_down = moved(before, down);
  for (size_t k = 0; k < kKeys; ++k)
    if (before[k] != all[3])
      EXPECT_EQ(down[k], before[k]) << "a key of another endpoint moved";
  EXPECT_EQ(assign(t, all), before); // back up: every key is back
  // Removed (its address gone from DNS): the table is built again without it.
  auto nine = all;
  nine.erase(nine.begin() + 3);
  Table t9;
  t9.build(members(nine));
  auto removed = assign(t9, nine);
  size_t moved_removed = moved(before, removed);
  Table again;
  again.build(members(all));
  EXPECT_EQ(assign(again, all), before); // added back: the same table
  std::printf("%s, 10,000 keys over 10 endpoints: one down moves %zu (%.1f%%), one removed "
              "moves %zu (%.1f%%); each returns all\n",
              name, moved_down, moved_down / 100.0, moved_removed, moved_removed / 100.0);
  // Its own keys, about 1/10, and (for a removal) few others.
  EXPECT_GT(moved_down, kKeys / 10 * 6 / 10);
  EXPECT_LT(moved_down, kKeys / 10 * 14 / 10);
  EXPECT_LT(moved_removed, kKeys / 10 * 16 / 10);
}

TEST(ConsistentHash, RingOneOfTenLeavesAndReturns) {
  one_of_ten_leaves_and_returns<HashRing>("ring_hash");
}

TEST(ConsistentHash, MaglevOneOfTenLeavesAndReturns) {
  one_of_ten_leaves_and_returns<MaglevTable>("maglev");
}

template <class Table> void shares_follow_weights(const char* name) {
  auto all = ids(3);
  Table t;
  t.build(members(all, {1, 2, 5}));
  auto a = assign(t, all);
  size_t n[3] = {};
  for (const auto& id : a)
    for (size_t i = 0; i < 3; ++i)
      n[i] += id == all[i];
  std::printf("%s, weights 1:2:5: %zu %zu %zu of 10,000 keys\n", name, n[0], n[1], n[2]);
  EXPECT_NEAR(n[0], kKeys * 1 / 8, kKeys / 25);
  EXPECT_NEAR(n[1], kKeys * 2 / 8, kKeys / 25);
  EXPECT_NEAR(n[2], kKeys * 5 / 8, kKeys / 25);
}

TEST(ConsistentHash, RingSharesFollowWeights) {
  shares_follow_weights<HashRing>("ring_hash");
}

TEST(ConsistentHash, MaglevSharesFollowWeights) {
  shares_follow_weights<MaglevTable>("maglev");
  MaglevTable t;
  auto all = ids(3);
  t.build(members(all, {1, 2, 5}));
  EXPECT_EQ(t.slots_of(0) + t.slots_of(1) + t.slots_of(2), MaglevTable::kSize);
  EXPECT_NEAR(static_cast<double>(t.slots_of(2)) / t.slots_of(0), 5.0, 0.05);
}

TEST(ConsistentHash, NoUsableMemberIsNone) {
  auto all = ids(4);
  HashRing r;
  r.build(members(all));
  MaglevTable m;
  m.build(members(all));
  EXPECT_EQ(r.find(1, [](size_t) { return false; }), HashRing::kNone);
  EXPECT_EQ(m.find(1, [](size_t) { return false; }), MaglevTable::kNone);
  HashRing empty;
  EXPECT_EQ(empty.find(1, [](size_t) { return true; }), HashRing::kNone);
}

TEST(ConsistentHash, RingSizeStaysBounded) {
  auto many = ids(20000);
  HashRing r;
  r.build(members(many));
  EXPECT_LE(r.points(), HashRing::kMaxPoints);
  EXPECT_GE(r.points(), many.size());
  HashRing one;
  one.build(members(ids(1)));
  EXPECT_EQ(one.points(), HashRing::kMinPoints);
}

} // namespace
} // namespace portico::upstream
