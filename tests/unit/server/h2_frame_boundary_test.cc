// H2FrameBoundary: the client's bytes end at a frame boundary only after whole frames, however
// they were split.
#include "server/h2_frame_boundary.h"

#include <gtest/gtest.h>
#include <string>

namespace portico::server {
namespace {

const std::string kMagic = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

std::string frame(uint32_t length, uint8_t type) {
  std::string f = {static_cast<char>(length >> 16),
                   static_cast<char>(length >> 8),
                   static_cast<char>(length),
                   static_cast<char>(type),
                   0,
                   0,
                   0,
                   0,
                   1};
  return f + std::string(length, 'x');
}

TEST(H2FrameBoundary, WholeFramesEndAtABoundaryAndPartsDoNot) {
  H2FrameBoundary b;
  EXPECT_TRUE(b.at_boundary());
  b.consume(kMagic.data(), 10);
  EXPECT_FALSE(b.at_boundary());
  std::string rest = kMagic.substr(10) + frame(6, 4) + frame(70000, 0);
  b.consume(rest.data(), rest.size());
  EXPECT_TRUE(b.at_boundary());
  std::string ping = frame(8, 6);
  for (size_t i = 0; i < ping.size(); ++i) { // byte by byte: only the last one ends it
    b.consume(&ping[i], 1);
    EXPECT_EQ(b.at_boundary(), i + 1 == ping.size()) << i;
  }
}

TEST(H2FrameBoundary, AnEmptyFrameEndsWithItsHeader) {
  H2FrameBoundary b;
  std::string s = kMagic + frame(0, 4);
  b.consume(s.data(), s.size() - 1);
  EXPECT_FALSE(b.at_boundary());
  b.consume(s.data() + s.size() - 1, 1);
  EXPECT_TRUE(b.at_boundary());
}

} // namespace
} // namespace portico::server
