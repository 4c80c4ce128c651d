// Outlier detection's decisions, on a clock the test moves: consecutive errors eject, a success
// between them does not; gateway errors and other 5xx count apart; an ejection lasts
// base × ejections (at most max) and ends on its own; no more than max_ejection_percent are
// out at once; the interval's sweep ejects a success rate far below the others' and lowers the
// multiplier of an endpoint that stayed in.
#include "upstream/outlier_detector.h"

#include <gtest/gtest.h>

namespace portico::upstream {
namespace {

using Outcome = OutlierDetector::Outcome;

config::ClusterConfig cluster(size_t endpoints, config::OutlierConfig o) {
  static int n = 0;
  config::ClusterConfig c;
  c.name = "outlier-test-" + std::to_string(n++); // a detector of its own
  for (size_t i = 0; i < endpoints; ++i)
    c.endpoints.push_back("127.0.0.1:" + std::to_string(9000 + i));
  o.enabled = true;
  c.outlier = o;
  return c;
}

bool out(const OutlierDetector& d, size_t e, double now) {
  return now < d.ejected_until(e).load();
}

TEST(OutlierDetector, ErrorsInARowEjectAndASuccessBetweenThemDoesNot) {
  config::OutlierConfig o;
  o.consecutive_gateway_errors = 3;
  o.consecutive_5xx = 0;
  o.max_ejection_percent = 100;
  o.base_ejection_time = 10;
  auto d = OutlierDetector::of(cluster(2, o));
  d->record(0, Outcome::GATEWAY_ERROR, 1);
  d->record(0, Outcome::GATEWAY_ERROR, 1);
  d->record(0, Outcome::SUCCESS, 1);
  d->record(1, Outcome::GATEWAY_ERROR, 1); // another endpoint's error: not endpoint 0's
  d->record(0, Outcome::GATEWAY_ERROR, 1);
  d->record(0, Outcome::GATEWAY_ERROR, 1);
  EXPECT_FALSE(out(*d, 0, 1));
  d->record(0, Outcome::GATEWAY_ERROR, 1);
  EXPECT_TRUE(out(*d, 0, 1));
  EXPECT_TRUE(out(*d, 0, 10.9));
  EXPECT_FALSE(out(*d, 0, 11)); // back on its own
  for (int i = 0; i < 3; ++i)
    d->record(0, Outcome::GATEWAY_ERROR, 12);
  EXPECT_TRUE(out(*d, 0, 31.9)); // the second ejection: twice as long
  EXPECT_FALSE(out(*d, 0, 32));
}

TEST(OutlierDetector, AnIntervalInServiceWithoutAFailureForgivesOneEjection) {
  config::OutlierConfig o;
  o.consecutive_gateway_errors = 3;
  o.consecutive_5xx = 0;
  o.max_ejection_percent = 100;
  o.base_ejection_time = 10;
  o.interval = 1;
  for (bool fails_in_the_interval : {false, true}) {
    auto d = OutlierDetector::of(cluster(2, o));
    for (int i = 0; i < 3; ++i)
      d->record(0, Outcome::GATEWAY_ERROR, 1); // the first sweep, then ejected until 11
    d->record(1, Outcome::SUCCESS, 11.5);      // a sweep: back, but not in for a whole interval
    if (fails_in_the_interval)
      d->record(0, Outcome::GATEWAY_ERROR, 12);
    d->record(1, Outcome::SUCCESS, 12.6); // the sweep that ends the interval [11.5, 12.6]
    for (int i = fails_in_the_interval ? 1 : 0; i < 3; ++i)
      d->record(0, Outcome::GATEWAY_ERROR, 13);
    double until = fails_in_the_interval ? 33 : 23; // base × 2, or base × 1 once forgiven
    EXPECT_TRUE(out(*d, 0, until - 0.1)) << fails_in_the_interval;
    EXPECT_FALSE(out(*d, 0, until)) << fails_in_the_interval;
  }
}

TEST(OutlierDetector, Other5xxCountOnlyAs5xx) {
  config::OutlierConfig o;
  o.consecutive_gateway_errors = 2;
  o.consecutive_5xx = 4;
  o.max_ejection_percent = 100;
  auto d = OutlierDetector::of(cluster(2, o));
  d->record(0, Outcome::GATEWAY_ERROR, 1);
  d->record(0, Outcome::FAILURE_5XX, 1); // breaks the gateway errors' row, not the 5xx one
  d->record(0, Outcome::GATEWAY_ERROR, 1);
  EXPECT_FALSE(out(*d, 0, 1));
  d->record(0, Outcome::FAILURE_5XX, 1); // the fourth 5xx in a row
  EXPECT_TRUE(out(*d, 0, 1));
}

TEST(OutlierDetector, NoMoreThanThePercentAreOutButAlwaysOneMayBe) {
  config::OutlierConfig o;
  o.consecutive_gateway_errors = 1;
  o.max_ejection_percent = 10; // of 4: less than one, so one
  auto d = OutlierDetector::of(cluster(4, o));
  for (size_t e = 0; e < 4; ++e)
    d->record(e, Outcome::GATEWAY_ERROR, 1);
  int ejected = 0;
  for (size_t e = 0; e < 4; ++e)
    ejected += out(*d, e, 1);
  EXPECT_EQ(ejected, 1);
}

TEST(OutlierDetector, TheSweepEjectsASuccessRateFarBelowTheOthers) {
  config::OutlierConfig o;
  o.consecutive_5xx = 0;
  o.consecutive_gateway_errors = 0;
  o.interval = 10;
  o.success_rate_minimum_hosts = 5;
  o.success_rate_request_volume = 10;
  o.success_rate_stdev = 1.0;
  auto d = OutlierDetector::of(cluster(5, o));
  d->record(0, Outcome::SUCCESS, 0); // the first sweep: nothing counted yet
  for (int i = 0; i < 20; ++i)
    for (size_t e = 0; e < 5; ++e)
      d->record(e, e == 4 && i % 5 ? Outcome::FAILURE_5XX : Outcome::SUCCESS, 1);
  EXPECT_FALSE(out(*d, 4, 5)); // no sweep before the interval ends
  d->record(0, Outcome::SUCCESS, 10);
  EXPECT_TRUE(out(*d, 4, 10));
  for (size_t e = 0; e < 4; ++e)
    EXPECT_FALSE(out(*d, e, 10));
}

TEST(OutlierDetector, TooFewEndpointsWithEnoughRequestsMakeNoSweepEjection) {
  config::OutlierConfig o;
  o.consecutive_5xx = 0;
  o.consecutive_gateway_errors = 0;
  o.success_rate_minimum_hosts = 5;
  o.success_rate_request_volume = 100; // never reached here
  auto d = OutlierDetector::of(cluster(5, o));
  for (int i = 0; i < 50; ++i)
    for (size_t e = 0; e < 5; ++e)
      d->record(e, e == 4 ? Outcome::FAILURE_5XX : Outcome::SUCCESS, 1);
  d->record(0, Outcome::SUCCESS, 20);
  EXPECT_FALSE(out(*d, 4, 20));
}

TEST(OutlierDetector, ADetectorIsTheClustersAcrossReloadsWhileItsConfigurationHolds) {
  config::OutlierConfig o;
  auto c = cluster(3, o);
  auto a = OutlierDetector::of(c);
  EXPECT_EQ(OutlierDetector::of(c), a);
  c.outlier.base_ejection_time = 99;
  EXPECT_NE(OutlierDetector::of(c), a);
}

} // namespace
} // namespace portico::upstream
