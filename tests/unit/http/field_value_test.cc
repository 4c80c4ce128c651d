// The word-at-a-time scans stop exactly where a byte-by-byte scan would: at every offset, for
// every byte value, with bytes that borrow (0x00, 0x01, 0x1f) and high bytes around the stop.
#include "http/field_value.h"

#include <gtest/gtest.h>
#include <vector>

namespace portico::http {
namespace {

const unsigned char* by_byte(const unsigned char* p, const unsigned char* end) {
  while (p < end && kFieldValueBytes[*p])
    ++p;
  return p;
}

TEST(FieldValue, TheWordScanStopsWhereTheByteScanDoes) {
  const unsigned char fillers[] = {'a', 0x80, 0xff, 0x20, 0x7e, 0x21};
  for (unsigned char filler : fillers) {
    for (size_t len = 0; len <= 24; ++len) {
      for (size_t at = 0; at <= len; ++at) {
        for (int b = 0; b < 256; ++b) {
          std::vector<unsigned char> buf(len, filler);
          if (at < len)
            buf[at] = static_cast<unsigned char>(b);
          if (at + 1 < len) // a stop after the first one must not be taken for it
            buf[at + 1] = 0x00;
          const unsigned char* begin = buf.data();
          const unsigned char* end = begin + len;
          ASSERT_EQ(skip_field_value(begin, end) - begin, by_byte(begin, end) - begin)
              << "filler " << int(filler) << " len " << len << " at " << at << " byte " << b;
        }
      }
    }
  }
}

TEST(FieldValue, ALineEndsAtItsCr) {
  std::string_view v = "text/plain; charset=utf-8\r\nDate";
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  EXPECT_EQ(skip_field_value(p, p + v.size()) - p, 25);
}

} // namespace
} // namespace portico::http
