#include "server/stream_body.h"

#include <gtest/gtest.h>
#include <string>

namespace portico::server {
namespace {

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>('a' + i % 23);
  return s;
}

std::string take(StreamBody& b, size_t n) {
  core::ByteQueue out;
  b.move_to(out, n);
  std::string s(out.size(), '\0');
  out.peek(s.data(), s.size());
  return s;
}

TEST(StreamBody, ASmallResponseTakesNoBlock) {
  int64_t before = core::BlockPool::local().in_use();
  http::InlineArena<> a;
  StreamBody b{a};
  b.append("hello world\n");
  EXPECT_EQ(b.size(), 12u);
  EXPECT_EQ(core::BlockPool::local().in_use(), before);
  EXPECT_EQ(take(b, 12), "hello world\n");
  EXPECT_TRUE(b.empty());
}

// The inline bytes are what the request's fields left of the arena; drained, they are the
// arena's again, so a response sent in many small pieces (server-sent events) keeps reusing
// them rather than using them up.
TEST(StreamBody, ItsInlineBytesAreTheArenasAndComeBackWhenDrained) {
  http::InlineArena<64> a;
  std::string_view fields = a.copy("content-type: text/plain"); // 24 bytes of request fields
  StreamBody b{a};
  int64_t before = core::BlockPool::local().in_use();
  for (int i = 0; i < 100; ++i) {
    b.append("data: 0123456789\n\n"); // 18 bytes: two fit beside the fields, not three
    b.append("data: 0123456789\n\n");
    EXPECT_EQ(core::BlockPool::local().in_use(), before) << i;
    EXPECT_EQ(take(b, 36), "data: 0123456789\n\ndata: 0123456789\n\n");
  }
  EXPECT_EQ(fields, "content-type: text/plain"); // never written over
  b.append(pattern(41)); // more than the room left: to the arena's spare chunk
  EXPECT_EQ(core::BlockPool::local().in_use(), before);
  EXPECT_EQ(take(b, 41), pattern(41));
  b.append(pattern(http::Arena::kSpare + 1)); // more than that: to a block
  EXPECT_GT(core::BlockPool::local().in_use(), before);
  EXPECT_EQ(take(b, http::Arena::kSpare + 1), pattern(http::Arena::kSpare + 1));
  EXPECT_EQ(fields, "content-type: text/plain");
}

// The arena is the request's and the response trailers' too: what they take between two
// pieces of the body moves the body's inline bytes to a block, in order, and is kept.
TEST(StreamBody, ArenaBytesTakenBetweenTwoPiecesAreKept) {
  http::InlineArena<> a;
  StreamBody b{a};
  b.append("first ");
  std::string_view trailer = a.copy("grpc-status: 0");
  b.append("second");
  EXPECT_EQ(trailer, "grpc-status: 0");
  EXPECT_EQ(take(b, 12), "first second");
  EXPECT_EQ(trailer, "grpc-status: 0");
  b.append("third");
  EXPECT_EQ(take(b, 5), "third");
}

TEST(StreamBody, PartialFramesKeepTheOrder) {
  http::InlineArena<> a;
  StreamBody b{a};
  std::string in = pattern(300);
  b.append(in);
  EXPECT_EQ(take(b, 100), in.substr(0, 100));
  b.append("tail");
  EXPECT_EQ(b.size(), 204u);
  EXPECT_EQ(take(b, 204), in.substr(100) + "tail");
}

TEST(StreamBody, GrowingPastTheInlineBytesSpillsThemFirst) {
  http::InlineArena<> a;
  StreamBody b{a};
  std::string in = pattern(3 * 16384 + 77);
  b.append(std::string_view(in).substr(0, 10));
  b.append(std::string_view(in).substr(10, http::Arena::kInline - 10));
  b.append(std::string_view(in).substr(http::Arena::kInline));
  EXPECT_EQ(b.size(), in.size());
  std::string out;
  while (!b.empty())
    out += take(b, 16384); // DATA frames of at most 16 KiB
  EXPECT_EQ(out, in);
}

TEST(StreamBody, ClearForgetsBothParts) {
  int64_t before = core::BlockPool::local().in_use();
  http::InlineArena<> a;
  StreamBody b{a};
  b.append(pattern(http::Arena::kSpare + 1));
  EXPECT_GT(core::BlockPool::local().in_use(), before);
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(core::BlockPool::local().in_use(), before);
  b.append("x");
  EXPECT_EQ(take(b, 1), "x");
}

} // namespace
} // namespace portico::server
