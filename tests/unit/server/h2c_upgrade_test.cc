// decode_http2_settings: the HTTP2-Settings header of an h2c upgrade (RFC 7540 3.2.1).
#include "server/h2c_upgrade.h"

#include <gtest/gtest.h>

#include <string>

namespace portico::server {
namespace {

// SETTINGS_MAX_CONCURRENT_STREAMS = 100, SETTINGS_INITIAL_WINDOW_SIZE = 65535.
const std::string kPayload("\x00\x03\x00\x00\x00\x64\x00\x04\x00\x00\xff\xff", 12);

TEST(DecodeHttp2Settings, ValidPayload) {
  std::string out = "stale";
  ASSERT_TRUE(decode_http2_settings("AAMAAABkAAQAAP__", out));
  EXPECT_EQ(out, kPayload);
}

TEST(DecodeHttp2Settings, OneEntryNeedsNoPadding) {
  // 6 bytes encode to 8 characters: "AAMAAABk" is MAX_CONCURRENT_STREAMS = 100.
  std::string out;
  ASSERT_TRUE(decode_http2_settings("AAMAAABk", out));
  EXPECT_EQ(out, kPayload.substr(0, 6));
}

TEST(DecodeHttp2Settings, EmptyIsAValidEmptySettingsFrame) {
  std::string out = "stale";
  EXPECT_TRUE(decode_http2_settings("", out));
  EXPECT_TRUE(out.empty());
}

TEST(DecodeHttp2Settings, TrailingPaddingIsTolerated) {
  // Clients should not pad (base64url without "="), but a padded value decodes the same.
  std::string out;
  ASSERT_TRUE(decode_http2_settings("AAMAAABkAAQAAP__", out));
  std::string padded;
  EXPECT_TRUE(decode_http2_settings("AAMAAABkAAQAAP__==", padded));
  EXPECT_EQ(padded, out);
}

TEST(DecodeHttp2Settings, RefusesCharactersOutsideTheAlphabet) {
  std::string out;
  for (const char* bad :
       {"AAMA*ABk", "AAMA ABk", "AAMA=ABk", "AAMAAABk\n", "AAMA.ABk", "\xc3\xa9MAAABk"})
    EXPECT_FALSE(decode_http2_settings(bad, out)) << bad;
}

TEST(DecodeHttp2Settings, RefusesALengthThatIsNotWholeEntries) {
  std::string out;
  // 4 bytes, 9 bytes, 3 bytes: not multiples of 6.
  EXPECT_FALSE(decode_http2_settings("AAMAAA", out));
  EXPECT_FALSE(decode_http2_settings("AAMAAABkAAQA", out));
  EXPECT_FALSE(decode_http2_settings("AAMA", out));
}

TEST(DecodeHttp2Settings, RefusesStandardBase64AndImpossibleLengths) {
  std::string out;
  // '+' and '/' belong to standard base64, not base64url; 1 and 9 characters encode no bytes.
  EXPECT_FALSE(decode_http2_settings("AAMA+ABk", out));
  EXPECT_FALSE(decode_http2_settings("AAMA/ABk", out));
  EXPECT_FALSE(decode_http2_settings("A", out));
  EXPECT_FALSE(decode_http2_settings("AAAAAAAAA", out));
}

} // namespace
} // namespace portico::server
