// Header helpers: case-insensitive comparison and comma-separated list membership.
#include "http/header.h"

#include <gtest/gtest.h>

namespace portico::http {
namespace {

TEST(Iequals, ComparesAsciiCaseInsensitively) {
  EXPECT_TRUE(iequals("Content-Length", "content-length"));
  EXPECT_TRUE(iequals("CHUNKED", "chunked"));
  EXPECT_TRUE(iequals("", ""));
  EXPECT_FALSE(iequals("chunked", "chunke"));
  EXPECT_FALSE(iequals("chunked", "chunkedx"));
  EXPECT_FALSE(iequals("a", "b"));
  // Only A-Z fold: "[" and "{" differ by 0x20 but are not letters.
  EXPECT_FALSE(iequals("[", "{"));
  EXPECT_FALSE(iequals("@", "`"));
  // No Unicode folding.
  EXPECT_FALSE(iequals("\xc3\x89", "\xc3\xa9"));
}

TEST(AsciiLower, OnlyLetters) {
  EXPECT_EQ(ascii_lower('A'), 'a');
  EXPECT_EQ(ascii_lower('Z'), 'z');
  EXPECT_EQ(ascii_lower('a'), 'a');
  EXPECT_EQ(ascii_lower('-'), '-');
  EXPECT_EQ(ascii_lower('['), '[');
  EXPECT_EQ(ascii_lower('\xc0'), '\xc0');
}

TEST(ListContains, FindsTokens) {
  EXPECT_TRUE(list_contains("keep-alive, Upgrade", "upgrade"));
  EXPECT_TRUE(list_contains("Upgrade", "upgrade"));
  EXPECT_TRUE(list_contains("close", "close"));
  EXPECT_TRUE(list_contains(" \tclose\t ", "close"));
  EXPECT_TRUE(list_contains("a,,b", "b"));
  EXPECT_TRUE(list_contains("a , b ,c", "b"));
  EXPECT_TRUE(list_contains("Upgrade, HTTP2-Settings", "http2-settings"));
}

TEST(ListContains, MatchesWholeItemsOnly) {
  EXPECT_FALSE(list_contains("", "close"));
  EXPECT_FALSE(list_contains("closed", "close"));
  EXPECT_FALSE(list_contains("keep-alive", "alive"));
  EXPECT_FALSE(list_contains("h2c-14", "h2c"));
  EXPECT_FALSE(list_contains("a b", "a"));
  EXPECT_FALSE(list_contains("\"close\"", "close"));
}

} // namespace
} // namespace portico::http
