#include "core/block_pool.h"

#include <gtest/gtest.h>
#include <vector>

namespace portico::core {
namespace {

std::vector<Block*> take(BlockPool& pool, size_t n) {
  std::vector<Block*> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back(pool.get());
  return v;
}

void give_back(BlockPool& pool, std::vector<Block*>& v) {
  for (Block* b : v)
    pool.put(b);
  v.clear();
}

// One loop pass through 8,000 busy connections takes thousands of blocks before the flushes
// at its end give them back: the next pass must find them all in the free list, not in malloc.
TEST(BlockPool, ATurnoverLargerThanTheFloorIsServedFromTheFreeList) {
  BlockPool pool;
  std::vector<Block*> held = take(pool, 5000);
  give_back(pool, held);
  uint64_t before = pool.allocations();
  held = take(pool, 5000);
  EXPECT_EQ(pool.allocations(), before);
  give_back(pool, held);
}

// What a burst left and nothing used since goes back to the allocator: a block idle for a
// whole interval between two trims is released, down to the floor kept warm.
TEST(BlockPool, TrimReleasesWhatAWholeIntervalDidNotUse) {
  BlockPool pool;
  std::vector<Block*> held = take(pool, 5000);
  give_back(pool, held);
  pool.trim(); // the burst was within this interval: all of it was in use
  EXPECT_EQ(pool.free_count(), 5000u);
  held = take(pool, 10); // light use: 4,990 stay idle through the next interval
  give_back(pool, held);
  pool.trim();
  EXPECT_EQ(pool.free_count(), BlockPool::kWarmFloor);
  pool.trim(); // nothing more to give: the floor stays
  EXPECT_EQ(pool.free_count(), BlockPool::kWarmFloor);
}

// Blocks in use are never counted as idle: trimming with everything handed out frees nothing.
TEST(BlockPool, TrimLeavesBlocksInUseAndTheirReturnAlone) {
  BlockPool pool;
  std::vector<Block*> held = take(pool, 3000);
  pool.trim();
  pool.trim();
  EXPECT_EQ(pool.free_count(), 0u);
  give_back(pool, held);
  EXPECT_EQ(pool.free_count(), 3000u);
  EXPECT_EQ(pool.in_use(), 0);
}

} // namespace
} // namespace portico::core
