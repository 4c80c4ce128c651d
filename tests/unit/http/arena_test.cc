// Arena: views stay valid until reset(); appending to the newest allocation grows it in place.
#include "http/arena.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace portico::http {
namespace {

TEST(Arena, CopyAndAllocate) {
  InlineArena<> a;
  EXPECT_TRUE(a.copy("").empty());
  std::string src = "hello";
  std::string_view v = a.copy(src);
  src = "xxxxx";
  EXPECT_EQ(v, "hello");
  EXPECT_NE(v.data(), src.data());
  char* p = a.allocate(3);
  std::memcpy(p, "abc", 3);
  EXPECT_EQ(std::string_view(p, 3), "abc");
  EXPECT_EQ(v, "hello");
}

TEST(Arena, AppendToTheNewestAllocationGrowsInPlace) {
  InlineArena<> a;
  std::string_view v = a.copy("ab");
  std::string_view w = a.append(v, "cd");
  EXPECT_EQ(w, "abcd");
  EXPECT_EQ(w.data(), v.data());
  // Appending to an empty view is a copy.
  std::string_view e = a.append({}, "xy");
  EXPECT_EQ(e, "xy");
}

TEST(Arena, AppendToAnOlderAllocationCopies) {
  InlineArena<> a;
  std::string_view first = a.copy("first");
  std::string_view second = a.copy("second");
  std::string_view grown = a.append(first, "+more");
  EXPECT_EQ(grown, "first+more");
  EXPECT_NE(grown.data(), first.data());
  // Nothing moved: the old views still read the same.
  EXPECT_EQ(first, "first");
  EXPECT_EQ(second, "second");
}

TEST(Arena, AppendAcrossABlockEnd) {
  InlineArena<> a;
  // Fill most of a block, then grow a value past its end.
  a.allocate(core::kBlockSize - 10);
  std::string_view v = a.copy("12345");
  std::string_view w = a.append(v, std::string(20, 'x'));
  EXPECT_EQ(w, "12345" + std::string(20, 'x'));
  EXPECT_EQ(v, "12345");
}

TEST(Arena, LargeAllocations) {
  InlineArena<> a;
  std::string big(3 * core::kBlockSize, 'B');
  std::string_view v = a.copy(big);
  EXPECT_EQ(v, big);
  std::string_view small = a.copy("small");
  EXPECT_EQ(small, "small");
  EXPECT_EQ(v, big);
}

TEST(Arena, AByteAtATimeValueGrowsInPlaceMostOfTheTime) {
  // A client may send a long header value a byte per packet: each byte is an append. Copies
  // must be rare (geometric growth), not one per byte.
  InlineArena<> a;
  std::string expect;
  std::string_view v;
  int moves = 0;
  for (int i = 0; i < 64 * 1024; ++i) {
    char c = static_cast<char>('a' + i % 26);
    expect.push_back(c);
    std::string_view w = a.append(v, {&c, 1});
    if (!v.empty() && w.data() != v.data())
      ++moves;
    v = w;
  }
  EXPECT_EQ(v, expect);
  EXPECT_LT(moves, 20);
}

TEST(Arena, ResetReturnsEveryBlock) {
  InlineArena<> a;
  for (int i = 0; i < 10; ++i)
    a.allocate(core::kBlockSize / 2);
  a.copy(std::string(100000, 'L'));
  size_t free_before = core::BlockPool::local().free_count();
  a.reset();
  // Ten half-block allocations took five blocks; all of them are back in the pool.
  EXPECT_GE(core::BlockPool::local().free_count(), free_before + 5);
  std::string_view v = a.copy("after reset");
  EXPECT_EQ(v, "after reset");
  // Small fields come from the arena's own bytes: no block is taken for them.
  EXPECT_EQ(core::BlockPool::local().free_count(), free_before + 5);
  a.release();
  EXPECT_EQ(a.copy("again"), "again");
}

TEST(Arena, InlineBytesFirstThenBlocks) {
  InlineArena<> a;
  size_t free_before = core::BlockPool::local().free_count();
  std::string_view first = a.copy(std::string(Arena::kInline - 10, 'a'));
  EXPECT_EQ(core::BlockPool::local().free_count(), free_before);
  // Growing in place within the inline bytes.
  std::string_view grown = a.append(first, "0123456789");
  EXPECT_EQ(grown.data(), first.data());
  EXPECT_EQ(grown.size(), Arena::kInline);
  // The next byte does not fit: a block is taken and the value moves there whole.
  std::string_view moved = a.append(grown, "!");
  EXPECT_NE(moved.data(), grown.data());
  EXPECT_EQ(moved.size(), Arena::kInline + 1);
  EXPECT_EQ(moved.back(), '!');
  EXPECT_EQ(moved.substr(0, 3), "aaa");
}

TEST(Arena, ItsInlineBytesAreItsOwnSizeThenOneSpareChunkThenBlocks) {
  InlineArena<64> a;
  EXPECT_LT(sizeof a, sizeof(InlineArena<>));
  int64_t blocks = core::BlockPool::local().in_use();
  std::string_view v = a.copy(std::string(64, 'a'));
  EXPECT_GE(v.data(), reinterpret_cast<const char*>(&a));
  EXPECT_LT(v.data(), reinterpret_cast<const char*>(&a) + sizeof a);
  // Past the inline bytes, the spare chunk: no block yet.
  std::string_view w = a.copy("b");
  EXPECT_TRUE(w.data() < reinterpret_cast<const char*>(&a) ||
              w.data() >= reinterpret_cast<const char*>(&a) + sizeof a);
  std::string_view x = a.copy(std::string(Arena::kSpare - 1, 'x'));
  EXPECT_EQ(x.data(), w.data() + 1);
  EXPECT_EQ(core::BlockPool::local().in_use(), blocks);
  // Past the spare chunk, a block.
  std::string_view y = a.copy("y");
  EXPECT_EQ(core::BlockPool::local().in_use(), blocks + 1);
  EXPECT_EQ(v, std::string(64, 'a'));
  EXPECT_EQ(w, "b");
  EXPECT_EQ(x, std::string(Arena::kSpare - 1, 'x'));
  EXPECT_EQ(y, "y");
  a.reset();
  EXPECT_EQ(core::BlockPool::local().in_use(), blocks);
  EXPECT_EQ(a.copy("c").data(), v.data()); // the inline bytes again
  // The spare chunk went back to the thread's free list, and is the next one taken.
  a.copy(std::string(63, 'a'));
  EXPECT_EQ(a.copy("d").data(), w.data());
}

// What request fields take: curl's, h2load's or a gRPC client's fit the inline bytes; a
// browser's (here Chromium's navigation, without cookies) the spare chunk; neither a block.
TEST(Arena, AnApiClientsFieldsStayInlineAndABrowsersTakeTheSpareChunk) {
  int64_t blocks = core::BlockPool::local().in_use();
  InlineArena<> api;
  const char* own = reinterpret_cast<const char*>(&api);
  for (auto f : {"127.0.0.1:8080", "/v1/items?id=42", "h2load nghttp2/1.52.0", "*/*"}) {
    std::string_view v = api.copy(f);
    EXPECT_TRUE(v.data() >= own && v.data() + v.size() <= own + sizeof api) << f;
  }
  InlineArena<> browser;
  for (auto f : {"www.example.com", "/", "\"Chromium\";v=\"120\", \"Not?A_Brand\";v=\"8\"", "?0",
                 "\"Linux\"", "1",
                 "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                 "Chrome/120.0.0.0 Safari/537.36",
                 "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
                 "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
                 "none", "navigate", "?1", "document", "gzip, deflate, br", "en-US,en;q=0.9"})
    browser.copy(f);
  EXPECT_EQ(core::BlockPool::local().in_use(), blocks);
}

} // namespace
} // namespace portico::http
