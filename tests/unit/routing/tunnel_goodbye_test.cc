#include "routing/tunnel_goodbye.h"

#include <gtest/gtest.h>
#include <string>

namespace portico::routing {
namespace {

// An unmasked binary frame with a payload of n bytes (n < 126).
std::string frame(size_t n) {
  std::string f = {static_cast<char>(0x82), static_cast<char>(n)};
  return f + std::string(n, 'p');
}

TEST(TunnelGoodbye, BetweenFramesTheCloseGoesAtOnce) {
  TunnelGoodbye g;
  bool now = true;
  EXPECT_EQ(g.pass(TunnelGoodbye::TO_CLIENT, frame(10), &now), frame(10));
  EXPECT_FALSE(now);
  EXPECT_TRUE(g.begin(TunnelGoodbye::TO_CLIENT));
  EXPECT_TRUE(g.over(TunnelGoodbye::TO_CLIENT));
  // Nothing more goes that way; the other way is untouched.
  EXPECT_EQ(g.pass(TunnelGoodbye::TO_CLIENT, frame(3), &now), "");
  EXPECT_FALSE(now);
  EXPECT_EQ(g.pass(TunnelGoodbye::TO_UPSTREAM, frame(3), &now), frame(3));
}

TEST(TunnelGoodbye, InsideAFrameTheCloseWaitsForItsEnd) {
  TunnelGoodbye g;
  bool now = false;
  std::string a = frame(100), b = frame(5);
  EXPECT_EQ(g.pass(TunnelGoodbye::TO_UPSTREAM, a.substr(0, 40), &now), a.substr(0, 40));
  EXPECT_FALSE(g.begin(TunnelGoodbye::TO_UPSTREAM));
  // The frame's next bytes pass, its end goes, and the next frame is dropped.
  EXPECT_EQ(g.pass(TunnelGoodbye::TO_UPSTREAM, a.substr(40, 30), &now), a.substr(40, 30));
  EXPECT_FALSE(now);
  std::string rest = a.substr(70) + b;
  EXPECT_EQ(g.pass(TunnelGoodbye::TO_UPSTREAM, rest, &now), a.substr(70));
  EXPECT_TRUE(now);
  EXPECT_EQ(g.pass(TunnelGoodbye::TO_UPSTREAM, b, &now), "");
  EXPECT_FALSE(now);
}

TEST(TunnelGoodbye, TheUpstreamsCloseIsMaskedAndTheClientsIsNot) {
  EXPECT_EQ(TunnelGoodbye::close_frame(TunnelGoodbye::TO_CLIENT),
            std::string("\x88\x02\x03\xe9", 4));
  std::string up = TunnelGoodbye::close_frame(TunnelGoodbye::TO_UPSTREAM);
  ASSERT_EQ(up.size(), 8u);
  EXPECT_EQ(static_cast<uint8_t>(up[1]) & 0x80, 0x80);
}

} // namespace
} // namespace portico::routing
