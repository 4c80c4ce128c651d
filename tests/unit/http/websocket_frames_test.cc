#include "http/websocket_frames.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace portico::http {
namespace {

std::string frame(uint8_t opcode, size_t payload, bool masked) {
  std::string f;
  f.push_back(static_cast<char>(0x80 | opcode));
  uint8_t mask_bit = masked ? 0x80 : 0;
  if (payload < 126) {
    f.push_back(static_cast<char>(mask_bit | payload));
  } else if (payload < 65536) {
    f.push_back(static_cast<char>(mask_bit | 126));
    f.push_back(static_cast<char>(payload >> 8));
    f.push_back(static_cast<char>(payload));
  } else {
    f.push_back(static_cast<char>(mask_bit | 127));
    for (int i = 7; i >= 0; --i)
      f.push_back(static_cast<char>(static_cast<uint64_t>(payload) >> (8 * i)));
  }
  if (masked)
    f.append("\x11\x22\x33\x44", 4);
  f.append(payload, 'x');
  return f;
}

TEST(WebSocketFrameCursor, FindsEveryBoundaryWhateverTheChunks) {
  // Small, 16-bit and 64-bit lengths, masked and not, an empty frame.
  std::string stream = frame(1, 5, true) + frame(2, 300, false) + frame(2, 70000, true) +
                       frame(9, 0, false) + frame(1, 125, true);
  size_t ends[5];
  ends[0] = frame(1, 5, true).size();
  ends[1] = ends[0] + frame(2, 300, false).size();
  ends[2] = ends[1] + frame(2, 70000, true).size();
  ends[3] = ends[2] + frame(9, 0, false).size();
  ends[4] = stream.size();
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{7}, size_t{1000}, stream.size()}) {
    WebSocketFrameCursor c;
    std::vector<size_t> found;
    size_t pos = 0;
    while (pos < stream.size()) {
      std::string_view piece(stream.data() + pos, std::min(chunk, stream.size() - pos));
      size_t done = 0;
      while (done < piece.size()) {
        // Step past a boundary we stand on, then stop at the next.
        done += c.advance(piece.substr(done, 1), false);
        size_t n = c.advance(piece.substr(done), true);
        done += n;
        if (c.at_boundary() && done <= piece.size())
          found.push_back(pos + done);
      }
      pos += piece.size();
    }
    // Each boundary is reported (an empty frame's right after its header); none inside.
    for (size_t e : ends)
      EXPECT_NE(std::find(found.begin(), found.end(), e), found.end()) << chunk << " " << e;
    for (size_t f : found)
      EXPECT_NE(std::find(std::begin(ends), std::end(ends), f), std::end(ends))
          << chunk << " " << f;
    EXPECT_TRUE(c.at_boundary());
  }
}

TEST(WebSocketFrameCursor, StopsAtOnceWhenAlreadyBetweenFrames) {
  WebSocketFrameCursor c;
  EXPECT_TRUE(c.at_boundary());
  std::string f = frame(1, 10, false);
  EXPECT_EQ(c.advance(f, true), 0u);
  EXPECT_EQ(c.advance(f.substr(0, 4), false), 4u);
  EXPECT_FALSE(c.at_boundary());
  EXPECT_EQ(c.advance(f.substr(4) + "more", true), f.size() - 4);
  EXPECT_TRUE(c.at_boundary());
}

TEST(WebSocketGoingAway, ServerAndClientFramesSay1001) {
  EXPECT_EQ(websocket_going_away(false), std::string("\x88\x02\x03\xe9", 4));
  std::string m = websocket_going_away(true, 0x01020304);
  ASSERT_EQ(m.size(), 8u);
  EXPECT_EQ(static_cast<uint8_t>(m[1]), 0x82);
  EXPECT_EQ(static_cast<uint8_t>(m[6] ^ m[2]), 0x03);
  EXPECT_EQ(static_cast<uint8_t>(m[7] ^ m[3]), 0xe9);
}

} // namespace
} // namespace portico::http
