// IMF-fixdate formatting and parsing (RFC 9110 5.6.7).
#include "core/http_date.h"

#include <gtest/gtest.h>

#include <string>

namespace portico::core {
namespace {

std::string format(time_t t) {
  char buf[kHttpDateLen];
  format_http_date(t, buf);
  return std::string(buf, kHttpDateLen);
}

TEST(HttpDate, FormatsTheRfcExample) {
  EXPECT_EQ(format(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(format(0), "Thu, 01 Jan 1970 00:00:00 GMT");
}

TEST(HttpDate, ParsesTheRfcExample) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
}

TEST(HttpDate, RoundTrips) {
  for (time_t t : {time_t{0}, time_t{784111777}, time_t{951782400} /* 2000-02-29 */,
                   time_t{2147483647}, time_t{4102444800} /* 2100-01-01 */,
                   time_t{253402300799} /* 9999-12-31 23:59:59 */, time(nullptr)}) {
    std::string s = format(t);
    EXPECT_EQ(parse_http_date(s), t) << s;
  }
}

TEST(HttpDate, ParsesTheObsoleteFormatsRecipientsMustAccept) {
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777); // RFC 850
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), 784111777);       // asctime
  EXPECT_EQ(parse_http_date("Sun Nov 06 08:49:37 1994"), 784111777);
  EXPECT_EQ(parse_http_date("Thu, 29 Feb 2024 00:00:00 GMT"), 1709164800);
}

TEST(HttpDate, RefusesOtherFormats) {
  for (const char* bad : {
           "Sunday, 06-Nov-94 08:49:37 UTC",
           "Sun Nov  6 08:49:37 1994 ",
           "sun, 06 Nov 1994 08:49:37 GMT", // HTTP-date is case-sensitive
           "Sun, 06 nov 1994 08:49:37 GMT",
           "Sun, 06 Nov 1994 08:49:37 gmt",
           "Thu, 29 Feb 2023 00:00:00 GMT",
           "Sun, 06 Nov 1994 8:49:37 GMT",
           "Sun, 06-Nov-1994 08:49:37 GMT",
           "Sun, 06 Nov 94 08:49:37 GMT",
           "0",
           "Sun, 06 Nov 1994 08:49:37 UTC",
           "Sun, 06 Nov 1994 08:49:37 +0000",
           "Sun, 6 Nov 1994 08:49:37 GMT",
           "Sun, 06 Nov 1994 08:49:37 GMT ",
           " Sun, 06 Nov 1994 08:49:37 GMT",
           "Sun, 06 Foo 1994 08:49:37 GMT",
           "Sun, 32 Nov 1994 08:49:37 GMT",
           "Sun, 06 Nov 1994 25:49:37 GMT",
           "Sun, 06 Nov 1994 08:49:37 GMTX",
           "",
       })
    EXPECT_FALSE(parse_http_date(bad).has_value()) << "'" << bad << "'";
}

TEST(HttpDate, NowIsCurrentAndWellFormed) {
  time_t before = time(nullptr);
  std::string_view now = http_date_now();
  time_t after = time(nullptr);
  ASSERT_EQ(now.size(), kHttpDateLen);
  auto t = parse_http_date(now);
  ASSERT_TRUE(t.has_value()) << now;
  EXPECT_GE(*t, before);
  EXPECT_LE(*t, after);
}

} // namespace
} // namespace portico::core
