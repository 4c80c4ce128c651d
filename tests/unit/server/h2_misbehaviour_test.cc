// The HTTP/2 client accounting behind GOAWAY: the glitch budget (ENHANCE_YOUR_CALM) and the
// stream ids a client skipped (PROTOCOL_ERROR, RFC 9113 5.1.1).
#include "server/h2_glitch_budget.h"
#include "server/h2_stream_ids.h"

#include <gtest/gtest.h>

namespace portico::server {
namespace {

TEST(GlitchBudget, BurstIsSpentAtOnce) {
  GlitchBudget b;
  for (int i = 0; i < GlitchBudget::kBurst; ++i)
    ASSERT_TRUE(b.spend(0)) << i;
  EXPECT_FALSE(b.spend(0));
}

TEST(GlitchBudget, RefillsAtItsRateAndNoFurtherThanTheBurst) {
  GlitchBudget b;
  for (int i = 0; i < GlitchBudget::kBurst; ++i)
    b.spend(0);
  // One second later: kRate more, not more.
  for (int i = 0; i < GlitchBudget::kRate; ++i)
    ASSERT_TRUE(b.spend(1.0)) << i;
  EXPECT_FALSE(b.spend(1.0));
  // A long quiet spell refills to the burst only.
  GlitchBudget c;
  for (int i = 0; i < GlitchBudget::kBurst; ++i)
    ASSERT_TRUE(c.spend(1000.0)) << i;
  EXPECT_FALSE(c.spend(1000.0));
}

TEST(GlitchBudget, ASteadyTrickleBelowTheRateLastsForever) {
  GlitchBudget b;
  for (int i = 0; i < 100000; ++i)
    ASSERT_TRUE(b.spend(i * 2.0 / GlitchBudget::kRate)) << i;
}

TEST(GlitchBudget, DecodedBytesPastTheAllowanceAreCharged) {
  // A block of 100 wire bytes may decode to 16 KiB + 400 bytes for free.
  GlitchBudget b;
  b.header_block_frame(60, true);
  b.header_block_frame(40, false);
  const size_t free = GlitchBudget::kFreeDecoded + GlitchBudget::kFreePerWireByte * 100;
  ASSERT_TRUE(b.decoded(free, 0));
  // Past it, a glitch per KiB: the burst lasts kBurst KiB more of this block.
  ASSERT_TRUE(b.decoded(GlitchBudget::kDecodedPerGlitch * GlitchBudget::kBurst, 0));
  EXPECT_FALSE(b.decoded(GlitchBudget::kDecodedPerGlitch, 0));
}

TEST(GlitchBudget, EachBlockHasItsOwnAllowance) {
  // Blocks that each stay within their allowance never spend anything.
  GlitchBudget b;
  for (int i = 0; i < 10000; ++i) {
    b.header_block_frame(10, true);
    ASSERT_TRUE(b.decoded(GlitchBudget::kFreeDecoded, 0)) << i;
  }
  for (int i = 0; i < GlitchBudget::kBurst; ++i)
    ASSERT_TRUE(b.spend(0)) << i;
  EXPECT_FALSE(b.spend(0));
}

TEST(GlitchBudget, ABlockSentPlainlyIsNotCharged) {
  // 100 KB of fields the client sent as 100 KB of literals: no amplification.
  GlitchBudget b;
  for (int i = 0; i < 7; ++i)
    b.header_block_frame(16384, i == 0);
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(b.decoded(1000, 0));
  for (int i = 0; i < GlitchBudget::kBurst; ++i)
    ASSERT_TRUE(b.spend(0)) << i;
  EXPECT_FALSE(b.spend(0));
}

TEST(GlitchBudget, AClosedStreamExcusesTwoLateFramesAndNoMore) {
  GlitchBudget b;
  for (int i = 0; i < 5000; ++i) {
    b.stream_closed();
    ASSERT_TRUE(b.spend_on_closed_stream(0)) << i; // a WINDOW_UPDATE after each response
  }
  for (int i = 0; i < GlitchBudget::kBurst; ++i)
    ASSERT_TRUE(b.spend(0)) << i; // the budget itself untouched
  EXPECT_FALSE(b.spend(0));
  // What a flood on one closed stream gets: two excused, then the budget.
  GlitchBudget c;
  c.stream_closed();
  for (uint32_t i = 0; i < GlitchBudget::kExcusedPerStream + GlitchBudget::kBurst; ++i)
    ASSERT_TRUE(c.spend_on_closed_stream(0)) << i;
  EXPECT_FALSE(c.spend_on_closed_stream(0));
  // Excuses do not pile up without bound.
  GlitchBudget d;
  for (int i = 0; i < 100000; ++i)
    d.stream_closed();
  for (uint32_t i = 0; i < GlitchBudget::kMaxExcused + GlitchBudget::kBurst; ++i)
    ASSERT_TRUE(d.spend_on_closed_stream(0)) << i;
  EXPECT_FALSE(d.spend_on_closed_stream(0));
}

TEST(ClientStreamIds, IncreasingIdsAreFine) {
  ClientStreamIds ids;
  for (int32_t id = 1; id < 200; id += 2)
    EXPECT_TRUE(ids.on_headers(id));
}

TEST(ClientStreamIds, ASkippedIdIsRefusedAnOpenedOneIsNot) {
  ClientStreamIds ids;
  EXPECT_TRUE(ids.on_headers(1));
  EXPECT_TRUE(ids.on_headers(7)); // skips 3 and 5
  EXPECT_FALSE(ids.on_headers(3));
  EXPECT_FALSE(ids.on_headers(5));
  EXPECT_TRUE(ids.on_headers(1)); // trailers on a stream opened before
  EXPECT_TRUE(ids.on_headers(7));
  EXPECT_TRUE(ids.on_headers(9));
}

TEST(ClientStreamIds, FirstStreamAboveOneSkipsTheIdsBelow) {
  ClientStreamIds ids;
  EXPECT_TRUE(ids.on_headers(5));
  EXPECT_FALSE(ids.on_headers(3));
  EXPECT_FALSE(ids.on_headers(1));
}

TEST(ClientStreamIds, UpgradedStreamOneIsOpened) {
  ClientStreamIds ids;
  ids.opened_by_upgrade();
  EXPECT_TRUE(ids.on_headers(3));
  EXPECT_TRUE(ids.on_headers(1));
}

TEST(ClientStreamIds, OldGapsAreForgottenNotMisjudged) {
  ClientStreamIds ids;
  int32_t id = 1;
  for (size_t i = 0; i <= ClientStreamIds::kMaxGaps + 1; ++i, id += 4)
    ids.on_headers(id);           // every other id skipped
  EXPECT_TRUE(ids.on_headers(3)); // the oldest gap is forgotten: left to nghttp2
  EXPECT_FALSE(ids.on_headers(id - 6));
}

} // namespace
} // namespace portico::server
