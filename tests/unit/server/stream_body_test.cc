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
  StreamBody b;
  b.append("hello world\n");
  EXPECT_EQ(b.size(), 12u);
  EXPECT_EQ(core::BlockPool::local().in_use(), before);
  EXPECT_EQ(take(b, 12), "hello world\n");
  EXPECT_TRUE(b.empty());
}

TEST(StreamBody, PartialFramesKeepTheOrder) {
  StreamBody b;
  std::string in = pattern(300);
  b.append(in);
  EXPECT_EQ(take(b, 100), in.substr(0, 100));
  b.append("tail");
  EXPECT_EQ(b.size(), 204u);
  EXPECT_EQ(take(b, 204), in.substr(100) + "tail");
}

TEST(StreamBody, GrowingPastTheInlineBytesSpillsThemFirst) {
  StreamBody b;
  std::string in = pattern(3 * 16384 + 77);
  b.append(std::string_view(in).substr(0, 10));
  b.append(std::string_view(in).substr(10, StreamBody::kInline));
  b.append(std::string_view(in).substr(10 + StreamBody::kInline));
  EXPECT_EQ(b.size(), in.size());
  std::string out;
  while (!b.empty())
    out += take(b, 16384); // DATA frames of at most 16 KiB
  EXPECT_EQ(out, in);
}

TEST(StreamBody, ClearForgetsBothParts) {
  int64_t before = core::BlockPool::local().in_use();
  StreamBody b;
  b.append(pattern(StreamBody::kInline + 1));
  EXPECT_GT(core::BlockPool::local().in_use(), before);
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(core::BlockPool::local().in_use(), before);
  b.append("x");
  EXPECT_EQ(take(b, 1), "x");
}

} // namespace
} // namespace portico::server
