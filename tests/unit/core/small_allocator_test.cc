#include "core/small_allocator.h"

#include <algorithm>
#include <cstring>
#include <gtest/gtest.h>
#include <malloc.h>
#include <nghttp2/nghttp2.h>
#include <set>
#include <vector>

namespace portico::core {
namespace {

TEST(SmallAllocator, ReusesChunksOfTheSameClass) {
  auto& a = SmallAllocator::local();
  void* p = a.allocate(100); // the 112-byte class
  a.deallocate(p);
  EXPECT_EQ(a.allocate(112), p);
  void* q = a.allocate(100);
  EXPECT_NE(q, p);
  a.deallocate(p);
  a.deallocate(q);
}

TEST(SmallAllocator, EveryClassBoundaryHoldsItsSize) {
  auto& a = SmallAllocator::local();
  std::vector<void*> live;
  std::set<void*> seen;
  for (size_t n : {0,   1,   16,  31,  32,   33,   48,   49,   64,   65,    127,
                   128, 129, 160, 161, 1000, 2048, 2049, 4096, 4097, 100000}) {
    auto* p = static_cast<unsigned char*>(a.allocate(n));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % SmallAllocator::kAlignment, 0u) << n;
    std::memset(p, 0xab, n); // ASan flags a chunk smaller than asked
    EXPECT_TRUE(seen.insert(p).second);
    live.push_back(p);
  }
  for (void* p : live)
    a.deallocate(p);
  a.deallocate(nullptr);
}

// A chunk is at most a quarter larger than what it was asked for (less than 16 bytes up to 128):
// nghttp2's header-table entries (80 bytes) and field buffers (40 bytes and the field) are most
// of a busy HTTP/2 connection's chunks, and power-of-two classes made each of them cost up to
// twice its size.
TEST(SmallAllocator, AChunkIsAtMostAQuarterLargerThanItsRequest) {
  for (size_t n = 0; n <= 32; ++n)
    ASSERT_EQ(SmallAllocator::class_of(n), 0u) << n;
  for (size_t n = 33; n <= 4096; ++n) {
    size_t c = SmallAllocator::class_of(n);
    ASSERT_LT(c, SmallAllocator::kClasses) << n;
    size_t have = SmallAllocator::class_size(c);
    ASSERT_GE(have, n) << n;
    ASSERT_LT(have - n, std::max<size_t>(16, n / 4)) << n;
    if (c > 0) {
      ASSERT_LT(SmallAllocator::class_size(c - 1), n) << n; // the smallest class that holds n
    }
  }
  EXPECT_GE(SmallAllocator::class_of(4097), SmallAllocator::kClasses);
}

// glibc adds its own 8 bytes to a request and rounds the chunk up to 16: with an 8-byte header
// a class chunk is exactly the class plus 16 bytes, nothing lost to rounding.
TEST(SmallAllocator, AClassChunkCostsItsSizeAndSixteenBytes) {
  auto& a = SmallAllocator::local();
  for (size_t c = 0; c < SmallAllocator::kClasses; ++c) {
    auto* p = static_cast<unsigned char*>(a.allocate(SmallAllocator::class_size(c)));
    EXPECT_EQ(::malloc_usable_size(p - SmallAllocator::kHeader) + 8,
              SmallAllocator::class_size(c) + 16)
        << c;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % SmallAllocator::kAlignment, 0u);
    a.deallocate(p);
  }
}

TEST(SmallAllocator, ReallocateKeepsTheBytes) {
  auto& a = SmallAllocator::local();
  auto* p = static_cast<char*>(a.allocate(40));
  std::memcpy(p, "0123456789", 10);
  EXPECT_EQ(a.reallocate(p, 48), p); // still within the 48-byte class
  auto* q = static_cast<char*>(a.reallocate(p, 5000));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(std::memcmp(q, "0123456789", 10), 0);
  auto* r = static_cast<char*>(a.reallocate(q, 9000)); // large to large
  EXPECT_EQ(std::memcmp(r, "0123456789", 10), 0);
  a.deallocate(r);
  auto* s = static_cast<char*>(a.reallocate(nullptr, 10));
  ASSERT_NE(s, nullptr);
  a.deallocate(s);
}

TEST(SmallAllocator, FreeListsAreBounded) {
  auto& a = SmallAllocator::local();
  std::vector<void*> many;
  const size_t c = SmallAllocator::class_of(500); // the 512-byte class
  for (size_t i = 0; i < SmallAllocator::max_free(c) + 100; ++i)
    many.push_back(a.allocate(500));
  EXPECT_EQ(a.free_count(c), 0u);
  for (void* p : many)
    a.deallocate(p); // the ones past the bound go back to malloc (LSan checks none is lost)
  EXPECT_EQ(a.free_count(c), SmallAllocator::max_free(c));
  // The list is reused before malloc is asked again.
  void* p = a.allocate(500);
  EXPECT_EQ(a.free_count(c), SmallAllocator::max_free(c) - 1);
  a.deallocate(p);
}

// What stayed free for a whole interval between two trims goes back to malloc; what an
// allocation reached in it stays.
TEST(SmallAllocator, TrimReleasesWhatAWholeIntervalDidNotUse) {
  auto& a = SmallAllocator::local();
  a.trim();
  a.trim();                                       // whatever earlier tests left is gone
  const size_t c = SmallAllocator::class_of(100); // the 112-byte class
  ASSERT_EQ(a.free_count(c), 0u);
  std::vector<void*> burst;
  for (int i = 0; i < 100; ++i)
    burst.push_back(a.allocate(100));
  for (void* p : burst)
    a.deallocate(p);
  EXPECT_EQ(a.trim(), 0u); // the burst was within this interval: all of it was in use
  EXPECT_EQ(a.free_count(c), 100u);
  std::vector<void*> steady;
  for (int i = 0; i < 30; ++i)
    steady.push_back(a.allocate(100));
  for (void* p : steady)
    a.deallocate(p);
  EXPECT_EQ(a.trim(),
            70u * (SmallAllocator::kHeader + 112)); // 70 never reached, each with its header
  EXPECT_EQ(a.free_count(c), 30u);
  EXPECT_EQ(a.allocate(100), steady.back()); // the warm head was kept
  a.deallocate(steady.back());
  EXPECT_EQ(a.trim(), 29u * (SmallAllocator::kHeader + 112));
  EXPECT_EQ(a.free_count(c), 1u);
}

TEST(SmallAllocator, LargeFreesAreCounted) {
  auto& a = SmallAllocator::local();
  a.take_large_freed();
  a.deallocate(a.allocate(100000));
  EXPECT_GE(a.take_large_freed(), 100000u);
  EXPECT_EQ(a.take_large_freed(), 0u);
}

TEST(SmallAllocator, Nghttp2CallocZeroesAndRefusesOverflow) {
  nghttp2_mem* m = SmallAllocator::nghttp2_allocator();
  auto* p = static_cast<unsigned char*>(m->malloc(64, m->mem_user_data));
  std::memset(p, 0xff, 64);
  m->free(p, m->mem_user_data);
  auto* z = static_cast<unsigned char*>(m->calloc(8, 8, m->mem_user_data));
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(z[i], 0);
  m->free(z, m->mem_user_data);
  EXPECT_EQ(m->calloc(SIZE_MAX / 2, 4, m->mem_user_data), nullptr);
}

} // namespace
} // namespace portico::core
