// Histogram: an observation lands in the first bucket whose upper bound is at or above it
// (Prometheus' le is inclusive), above the last bound in +Inf; the sum is kept in whole
// nanoseconds. And the log-spaced bounds the configuration gives it by default.
#include "core/histogram_bounds.h"
#include "metrics/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <vector>

namespace portico::metrics {
namespace {

struct Snapshot {
  std::vector<uint64_t> buckets;
  uint64_t count = 0;
  double sum = 0;
};

Snapshot snapshot(const Histogram& h) {
  Snapshot s;
  h.add_to(s.buckets, s.count, s.sum);
  return s;
}

// The bucket a single observation lands in.
size_t bucket_of(const std::vector<double>& bounds, double seconds) {
  Histogram h(&bounds);
  h.observe(seconds);
  Snapshot s = snapshot(h);
  EXPECT_EQ(s.buckets.size(), bounds.size() + 1);
  EXPECT_EQ(s.count, 1u);
  for (size_t i = 0; i < s.buckets.size(); ++i)
    if (s.buckets[i] == 1)
      return i;
  ADD_FAILURE() << "no bucket holds " << seconds;
  return SIZE_MAX;
}

TEST(Histogram, ObservationsLandInTheirBucketEdgesIncluded) {
  const std::vector<double> bounds{0.001, 0.01, 0.1, 1};
  EXPECT_EQ(bucket_of(bounds, 0), 0u);
  EXPECT_EQ(bucket_of(bounds, 0.0005), 0u);
  EXPECT_EQ(bucket_of(bounds, 0.001), 0u); // at the edge: le is inclusive
  EXPECT_EQ(bucket_of(bounds, std::nextafter(0.001, 1.0)), 1u);
  EXPECT_EQ(bucket_of(bounds, 0.01), 1u);
  EXPECT_EQ(bucket_of(bounds, 0.05), 2u);
  EXPECT_EQ(bucket_of(bounds, 0.1), 2u);
  EXPECT_EQ(bucket_of(bounds, 1), 3u);
  EXPECT_EQ(bucket_of(bounds, std::nextafter(1.0, 2.0)), 4u); // +Inf
  EXPECT_EQ(bucket_of(bounds, 3600), 4u);
  // A clock step backwards counts as the fastest bucket, not as a wrapped huge value.
  EXPECT_EQ(bucket_of(bounds, -0.5), 0u);
}

TEST(Histogram, CountsPerBucketSumAndCount) {
  const std::vector<double> bounds{0.001, 0.01, 0.1};
  Histogram h(&bounds);
  for (double v : {0.0005, 0.001, 0.002, 0.25, 0.5, 0.008})
    h.observe(v);
  Snapshot s = snapshot(h);
  EXPECT_EQ(s.buckets, (std::vector<uint64_t>{2, 2, 0, 2}));
  EXPECT_EQ(s.count, 6u);
  EXPECT_NEAR(s.sum, 0.7615, 1e-9);
  EXPECT_EQ(&h.bounds(), &bounds);
}

TEST(Histogram, NegativeObservationAddsNothingToTheSum) {
  const std::vector<double> bounds{1};
  Histogram h(&bounds);
  h.observe(2);
  h.observe(-1);
  Snapshot s = snapshot(h);
  EXPECT_EQ(s.count, 2u);
  EXPECT_DOUBLE_EQ(s.sum, 2);
}

TEST(Histogram, AddToAccumulatesOverShards) {
  const std::vector<double> bounds{0.01, 0.1};
  Histogram a(&bounds), b(&bounds);
  a.observe(0.005);
  a.observe(0.5);
  b.observe(0.05);
  b.observe(0.5);
  b.observe(0.5);
  Snapshot s;
  a.add_to(s.buckets, s.count, s.sum);
  b.add_to(s.buckets, s.count, s.sum);
  EXPECT_EQ(s.buckets, (std::vector<uint64_t>{1, 1, 3}));
  EXPECT_EQ(s.count, 5u);
  EXPECT_NEAR(s.sum, 1.555, 1e-9);
}

TEST(Histogram, NoBoundsMeansRecordingIsOff) {
  const std::vector<double> none;
  Histogram h(&none);
  h.observe(0.5);
  Snapshot s = snapshot(h);
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.sum, 0);
  EXPECT_EQ(s.buckets, (std::vector<uint64_t>{0})); // only +Inf, empty
}

TEST(Histogram, AsManyBoundsAsAllowedStillHaveAnInfBucket) {
  std::vector<double> bounds;
  for (size_t i = 1; i <= Histogram::kMaxBuckets; ++i)
    bounds.push_back(static_cast<double>(i));
  EXPECT_EQ(bucket_of(bounds, static_cast<double>(Histogram::kMaxBuckets)),
            Histogram::kMaxBuckets - 1);
  EXPECT_EQ(bucket_of(bounds, 1e9), Histogram::kMaxBuckets);
}

TEST(HistogramBounds, TheDefaultsHoldTheAlertThresholds) {
  std::vector<double> b = core::default_bounds();
  for (double slo : {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0})
    EXPECT_NE(std::find(b.begin(), b.end(), slo), b.end()) << slo;
  EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
  EXPECT_EQ(b.back(), 60);
  EXPECT_LE(b.size(), core::kMaxHistogramBuckets);
}

TEST(HistogramBounds, LogSpacedAreTwoDigitFrom50usTo60s) {
  const std::vector<double> expected{50e-6, 110e-6, 230e-6, 500e-6, 0.0011, 0.0023, 0.005,
                                     0.011, 0.023,  0.05,   0.11,   0.23,   0.5,    1.1,
                                     2.3,   5,      11,     23,     50,     60};
  std::vector<double> b = log_spaced_bounds();
  ASSERT_EQ(b.size(), expected.size());
  for (size_t i = 0; i < b.size(); ++i)
    EXPECT_DOUBLE_EQ(b[i], expected[i]) << i;
  EXPECT_LE(b.size(), core::kMaxHistogramBuckets);
}

TEST(HistogramBounds, OnePerDecadeAndCappedAtHighest) {
  std::vector<double> b = core::log_spaced_bounds(0.001, 10, 1);
  EXPECT_EQ(b, (std::vector<double>{0.001, 0.01, 0.1, 1, 10}));
  // The last bound is highest itself even off the log grid.
  b = core::log_spaced_bounds(0.001, 0.5, 1);
  EXPECT_EQ(b, (std::vector<double>{0.001, 0.01, 0.1, 0.5}));
}

TEST(HistogramBounds, StrictlyIncreasing) {
  for (double lowest : {1e-6, 50e-6, 0.001, 0.25})
    for (int per_decade = 1; per_decade <= 20; ++per_decade) {
      std::vector<double> b = core::log_spaced_bounds(lowest, 60, per_decade);
      ASSERT_FALSE(b.empty());
      EXPECT_EQ(b.back(), 60);
      for (size_t i = 1; i < b.size(); ++i)
        EXPECT_LT(b[i - 1], b[i]) << lowest << " " << per_decade << " at " << i;
    }
}

// log_spaced_bounds() once rounded with round(v / scale) * scale, and scale (a negative power
// of ten) is not exact in binary: the first bound came out as 4.9999999999999996e-05, one ulp
// below the le="5e-05" it is exposed as, and an observation of exactly 50 us missed it.
TEST(HistogramBounds, ABoundHoldsTheValueItIsLabelledWith) {
  std::vector<double> b = log_spaced_bounds();
  EXPECT_EQ(b.front(), 50e-6);
  EXPECT_EQ(bucket_of(b, 50e-6), 0u);
  for (double lowest : {1e-6, 1e-5, 50e-6, 0.001})
    for (int per_decade = 1; per_decade <= 5; ++per_decade)
      for (double v : core::log_spaced_bounds(lowest, 60, per_decade)) {
        char text[32];
        std::snprintf(text, sizeof text, "%.2g", v);
        EXPECT_GE(v, std::strtod(text, nullptr))
            << std::setprecision(17) << v << " below " << text << ": lowest " << lowest << ", "
            << per_decade << " per decade: " << text;
      }
}

} // namespace
} // namespace portico::metrics
