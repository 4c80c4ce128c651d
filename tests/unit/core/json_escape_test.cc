// append_json_escaped: whatever bytes come in, one line of valid JSON comes out.
#include "core/json_escape.h"

#include <gtest/gtest.h>

namespace portico::core {
namespace {

std::string esc(std::string_view s) {
  std::string out;
  append_json_escaped(out, s);
  return out;
}

TEST(JsonEscape, QuotesBackslashesAndControlBytes) {
  EXPECT_EQ(esc("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(esc(std::string_view("\x00\x1f\x7f", 3)), "\\u0000\\u001f\\u007f");
  EXPECT_EQ(esc("\n"), "\\u000a");
}

TEST(JsonEscape, WellFormedUtf8PassesThrough) {
  EXPECT_EQ(esc("caf\xc3\xa9"), "caf\xc3\xa9");                           // é
  EXPECT_EQ(esc("\xe6\x97\xa5\xe6\x9c\xac"), "\xe6\x97\xa5\xe6\x9c\xac"); // 日本
  EXPECT_EQ(esc("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");                 // U+1F600
  EXPECT_EQ(esc("\xf4\x8f\xbf\xbf"), "\xf4\x8f\xbf\xbf");                 // U+10FFFF, the last
}

TEST(JsonEscape, IllFormedBytesBecomeReplacementCharacters) {
  EXPECT_EQ(esc("\xff"), "\\ufffd");                                  // never in UTF-8
  EXPECT_EQ(esc("a\xc3"), "a\\ufffd");                                // cut short
  EXPECT_EQ(esc("\xc3("), "\\ufffd(");                                // not a continuation
  EXPECT_EQ(esc("\xc0\xaf"), "\\ufffd\\ufffd");                       // overlong '/'
  EXPECT_EQ(esc("\xe0\x80\xaf"), "\\ufffd\\ufffd\\ufffd");            // overlong, three bytes
  EXPECT_EQ(esc("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd");            // a surrogate
  EXPECT_EQ(esc("\xf4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd"); // above U+10FFFF
  EXPECT_EQ(esc("\x80ok"), "\\ufffdok");                              // a stray continuation
}

} // namespace
} // namespace portico::core
