// The hedge delay (upstream/hedge_delay.h): fixed, or a quantile of the recent first-byte
// latencies, interpolated within its bucket, never below the fixed delay.
#include "upstream/hedge_delay.h"

#include <gtest/gtest.h>

namespace portico::upstream {
namespace {

TEST(HedgeDelay, QuantileInterpolatesWithinItsBucket) {
  std::vector<double> bounds = {0.01, 0.1, 1};
  // 90 below 10 ms, 10 between 10 and 100 ms.
  EXPECT_NEAR(HedgeDelay::quantile(bounds, {90, 10, 0, 0}, 0.5), 0.01 * 50 / 90, 1e-9);
  EXPECT_NEAR(HedgeDelay::quantile(bounds, {90, 10, 0, 0}, 0.95), 0.01 + 0.09 * 5 / 10, 1e-9);
  EXPECT_DOUBLE_EQ(HedgeDelay::quantile(bounds, {0, 0, 0, 5}, 0.9), 1); // +Inf: the top bound
  EXPECT_EQ(HedgeDelay::quantile(bounds, {0, 0, 0, 0}, 0.9), -1);
}

TEST(HedgeDelay, FixedOrTheRecentQuantileNeverBelowTheDelay) {
  std::vector<double> bounds = {0.01, 0.1, 1};
  metrics::Histogram h(&bounds);
  config::HedgeConfig cfg;
  cfg.delay = 0.005;
  HedgeDelay d;
  EXPECT_EQ(d.get(cfg, h, 0), 0.005); // no quantile: the delay
  cfg.quantile = 0.95;
  EXPECT_EQ(d.get(cfg, h, 10), 0.005); // too few samples yet
  for (int i = 0; i < 100; ++i)
    h.observe(i < 90 ? 0.002 : 0.05);
  EXPECT_EQ(d.get(cfg, h, 10.5), 0.005); // read at most once a second
  EXPECT_NEAR(d.get(cfg, h, 11), 0.055, 1e-9);
  // The next window: only fast answers since, the quantile falls into the first bucket.
  for (int i = 0; i < 100; ++i)
    h.observe(0.0001);
  EXPECT_NEAR(d.get(cfg, h, 12), 0.0095, 1e-9);
  cfg.delay = 0.02; // ...but never below the delay
  EXPECT_EQ(d.get(cfg, h, 12.5), 0.02);
}

} // namespace
} // namespace portico::upstream
