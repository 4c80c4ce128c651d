#include "config/config_loader.h"
#include "core/histogram_bounds.h"
#include "metrics/histogram.h"

#include <gtest/gtest.h>

namespace portico::config {
namespace {

constexpr std::string_view kBase = R"(
[[listener]]
address = "127.0.0.1:8080"
[[cluster]]
name = "app"
endpoints = ["unix:/dev/shm/app.sock"]
[[route]]
cluster = "app"
)";

std::optional<Config> parse_with(std::string_view extra, std::vector<std::string>* errors) {
  std::string text(kBase);
  text += extra;
  return parse_config(text, "m.toml", errors);
}

TEST(ConfigMetrics, DefaultsAreTheAlertThresholdsFrom100usTo60s) {
  std::vector<std::string> errors;
  auto c = parse_with("", &errors);
  ASSERT_TRUE(c) << errors.front();
  EXPECT_TRUE(c->metrics.enabled);
  EXPECT_EQ(c->metrics.buckets, core::default_bounds());
  EXPECT_DOUBLE_EQ(c->metrics.buckets.front(), 100e-6);
  EXPECT_DOUBLE_EQ(c->metrics.buckets.back(), 60);
  EXPECT_LE(c->metrics.buckets.size(), metrics::Histogram::kMaxBuckets);
}

TEST(ConfigMetrics, ExplicitBucketsAndOff) {
  std::vector<std::string> errors;
  auto c = parse_with("[metrics]\nenabled = false\nbuckets = [0.001, 0.01, 1, 10]\n", &errors);
  ASSERT_TRUE(c) << errors.front();
  EXPECT_FALSE(c->metrics.enabled);
  EXPECT_EQ(c->metrics.buckets, (std::vector<double>{0.001, 0.01, 1, 10}));
}

TEST(ConfigMetrics, LogSpacedParameters) {
  std::vector<std::string> errors;
  auto c = parse_with("[metrics]\nbucket_min = 0.001\nbucket_max = 10\nbuckets_per_decade = 1\n",
                      &errors);
  ASSERT_TRUE(c) << errors.front();
  EXPECT_EQ(c->metrics.buckets, (std::vector<double>{0.001, 0.01, 0.1, 1, 10}));
}

TEST(ConfigMetrics, BadBucketsAreRefusedWithPosition) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"[metrics]\nbuckets = [0.1, 0.01]\n", "m.toml:10:"},
      {"[metrics]\nbuckets = [0.1, 0.01]\n", "must increase"},
      {"[metrics]\nbuckets = [-1]\n", "positive number"},
      {"[metrics]\nbuckets = []\n", "non-empty array"},
      {"[metrics]\nbuckets = [1]\nbucket_min = 0.1\n", "cannot go with"},
      {"[metrics]\nbucket_min = 1\nbucket_max = 0.5\n", "above bucket_min"},
      {"[metrics]\nbucket_min = 1e-6\nbuckets_per_decade = 10\n", "at most 40"},
      {"[metrics]\nenable = true\n", "unknown key 'enable' in [metrics]"},
      {"[metrics]\nenabled = 1\n", "true or false"},
  };
  for (const Case& k : cases) {
    std::vector<std::string> errors;
    EXPECT_FALSE(parse_with(k.text, &errors)) << k.text;
    ASSERT_FALSE(errors.empty()) << k.text;
    EXPECT_NE(errors[0].find(k.message), std::string::npos) << k.text << " gave " << errors[0];
  }
}

TEST(ConfigMetrics, FailTimeout) {
  std::vector<std::string> errors;
  auto c = parse_config(R"(
[[listener]]
address = "127.0.0.1:8080"
[[cluster]]
name = "app"
endpoints = ["127.0.0.1:1", "127.0.0.1:2"]
fail_timeout = 0
[[route]]
cluster = "app"
)",
                        "f.toml", &errors);
  ASSERT_TRUE(c) << errors.front();
  EXPECT_EQ(c->clusters[0].fail_timeout, 0);
  EXPECT_EQ(parse_with("", &errors)->clusters[0].fail_timeout, 10);
}

} // namespace
} // namespace portico::config
