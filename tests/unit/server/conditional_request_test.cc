// If-None-Match lists and single byte ranges (RFC 9110 13.1.2, 14.1.2), and content types by
// extension: the parts of static files that read request fields, checked without a file.
#include "server/conditional_request.h"
#include "server/content_types.h"

#include <gtest/gtest.h>
#include <string>

namespace portico::server {
namespace {

TEST(EtagList, WeakComparisonAndTheWildcard) {
  EXPECT_TRUE(etag_list_matches("\"a\"", "\"a\""));
  EXPECT_TRUE(etag_list_matches("W/\"a\"", "\"a\""));
  EXPECT_TRUE(etag_list_matches("\"x\", W/\"y\" ,\"a\"", "\"a\""));
  EXPECT_TRUE(etag_list_matches("*", "\"a\""));
  EXPECT_FALSE(etag_list_matches("\"b\"", "\"a\""));
  EXPECT_FALSE(etag_list_matches("", "\"a\""));
  EXPECT_FALSE(etag_list_matches("a", "\"a\""));   // unquoted: malformed, no match
  EXPECT_FALSE(etag_list_matches("\"a", "\"a\"")); // unterminated
  EXPECT_FALSE(etag_list_matches("W/", "\"a\""));
}

struct Range {
  RangeKind kind;
  int64_t first = -1, last = -1;
};

Range range(std::string_view v, int64_t size) {
  Range r;
  r.kind = parse_range(v, size, &r.first, &r.last);
  return r;
}

TEST(ByteRange, OneSatisfiableRange) {
  auto r = range("bytes=0-99", 1000);
  EXPECT_EQ(r.kind, RangeKind::PARTIAL);
  EXPECT_EQ(r.first, 0);
  EXPECT_EQ(r.last, 99);
  r = range("bytes=900-", 1000);
  EXPECT_EQ(r.first, 900);
  EXPECT_EQ(r.last, 999);
  r = range("bytes=-100", 1000); // the last 100
  EXPECT_EQ(r.first, 900);
  EXPECT_EQ(r.last, 999);
  r = range("bytes=-5000", 1000); // more than there is: all of it
  EXPECT_EQ(r.first, 0);
  r = range("bytes=500-99999", 1000); // clipped to the end
  EXPECT_EQ(r.last, 999);
  EXPECT_EQ(range("BYTES=1-2", 10).kind, RangeKind::PARTIAL);
}

TEST(ByteRange, PastTheEndIs416) {
  EXPECT_EQ(range("bytes=1000-", 1000).kind, RangeKind::UNSATISFIABLE);
  EXPECT_EQ(range("bytes=5000-6000", 1000).kind, RangeKind::UNSATISFIABLE);
  EXPECT_EQ(range("bytes=-0", 1000).kind, RangeKind::UNSATISFIABLE);
  EXPECT_EQ(range("bytes=0-", 0).kind, RangeKind::UNSATISFIABLE);
}

TEST(ByteRange, WhatIsNotOneRangeIsTheWholeFile) {
  for (std::string v : {"", "bytes", "bytes=", "bytes=-", "bytes=a-b", "bytes=5-1", "bytes=0-1,5-6",
                        "items=0-1", "bytes=99999999999999999999-", "bytes=-99999999999999999999",
                        "bytes= 1 - 2x", "bytes=+1-2"})
    EXPECT_EQ(range(v, 1000).kind, RangeKind::FULL) << v;
}

TEST(ByteRange, ContentRange) {
  // The largest sizes fit: a 64-byte buffer held two 19-digit numbers and not the third.
  char buf[kContentRangeMax];
  EXPECT_EQ(format_content_range(buf, 0, 99, 1000), "bytes 0-99/1000");
  EXPECT_EQ(format_content_range(buf, -1, 0, 1000), "bytes */1000");
  EXPECT_EQ(format_content_range(buf, INT64_MAX - 1, INT64_MAX - 1, INT64_MAX),
            "bytes 9223372036854775806-9223372036854775806/9223372036854775807");
}

TEST(ContentTypes, ByExtensionAnyCase) {
  EXPECT_EQ(content_type_for("a/b.CSS"), "text/css; charset=utf-8");
  EXPECT_EQ(content_type_for("app.js").substr(0, 15), "text/javascript");
  EXPECT_EQ(content_type_for("x.wasm"), "application/wasm");
  EXPECT_EQ(content_type_for("noext"), kDefaultContentType);
  EXPECT_EQ(content_type_for(".hidden"), kDefaultContentType);
  EXPECT_EQ(content_type_for("dir.d/file"), kDefaultContentType);
}

} // namespace
} // namespace portico::server
