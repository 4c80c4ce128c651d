// The string checks on a static request path: decoding, ".." segments, dotfiles.
#include "server/static_path.h"

#include <gtest/gtest.h>

namespace portico::server {
namespace {

std::pair<int, std::string> decode(std::string_view in, size_t cap = 64) {
  char out[256];
  size_t len = 0;
  int status = decode_path(in, out, cap, &len);
  return {status, status ? std::string() : std::string(out, len)};
}

TEST(StaticPath, DecodesEscapes) {
  EXPECT_EQ(decode("/a%20b/%2E%2e/c"), std::make_pair(0, std::string("/a b/../c")));
  EXPECT_EQ(decode("/%c0%ae").second, "/\xc0\xae"); // overlong UTF-8 stays bytes, never '.'
  EXPECT_EQ(decode("/%252e").second, "/%2e");       // decoded once only
}

TEST(StaticPath, RefusesWhatCannotBeAFileName) {
  EXPECT_EQ(decode("/a%00b").first, 400);
  EXPECT_EQ(decode("/a%5cb").first, 400);
  EXPECT_EQ(decode("/a\\b").first, 400);
  EXPECT_EQ(decode("/%zz").first, 400);
  EXPECT_EQ(decode("/%4").first, 400);
  EXPECT_EQ(decode("/%").first, 400);
  EXPECT_EQ(decode(std::string(65, 'a')).first, 404); // too long for the buffer
}

TEST(StaticPath, DotDotSegments) {
  EXPECT_TRUE(has_dot_dot_segment("/../x"));
  EXPECT_TRUE(has_dot_dot_segment("/a/.."));
  EXPECT_TRUE(has_dot_dot_segment(".."));
  EXPECT_FALSE(has_dot_dot_segment("/a..b/..c/c.."));
  EXPECT_FALSE(has_dot_dot_segment("/./x"));
}

TEST(StaticPath, DotFiles) {
  EXPECT_TRUE(has_dot_file("/.env"));
  EXPECT_TRUE(has_dot_file("/a/.git/config"));
  EXPECT_TRUE(has_dot_file("/./x"));
  EXPECT_FALSE(has_dot_file("/a.b/c."));
  EXPECT_FALSE(has_dot_file("/"));
}

} // namespace
} // namespace portico::server
