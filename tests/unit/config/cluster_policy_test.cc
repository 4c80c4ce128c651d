// A cluster's policy tables (config/cluster_policy_section.cc): retry, its defaults and its
// refusals, with FILE:LINE:COL.
#include "config/config_loader.h"

#include <gtest/gtest.h>
#include <span>

namespace portico::config {
namespace {

std::string with_cluster_line(std::string_view line) {
  std::string out = "[[listener]]\naddress = \"127.0.0.1:8080\"\n[[cluster]]\nname = \"app\"\n"
                    "endpoints = [\"127.0.0.1:9000\"]\n";
  out += line;
  out += "\n[[route]]\ncluster = \"app\"\n";
  return out;
}

std::optional<Config> parsed(std::string_view line, std::vector<std::string>* errors) {
  return parse_config(with_cluster_line(line), "t.toml", errors);
}

// A cluster line refused: the first error at FILE:LINE:COL, saying what.
struct Refusal {
  const char* line;
  const char* at;
  const char* says;
};

void expect_refused(std::span<const Refusal> cases) {
  for (const auto& k : cases) {
    std::vector<std::string> errors;
    EXPECT_FALSE(parsed(k.line, &errors)) << k.line;
    ASSERT_FALSE(errors.empty()) << k.line;
    EXPECT_TRUE(errors[0].starts_with(k.at)) << errors[0];
    EXPECT_NE(errors[0].find(k.says), std::string::npos) << errors[0];
  }
}

TEST(ClusterPolicy, RetryDefaultsAreOneImmediateRetryWithoutABudget) {
  std::vector<std::string> errors;
  auto c = parsed("", &errors);
  ASSERT_TRUE(c) << errors[0];
  const RetryConfig& r = c->clusters[0].retry;
  EXPECT_EQ(r.retries, 1);
  EXPECT_EQ(r.per_try_timeout, 0);
  EXPECT_TRUE(r.on_status.empty());
  EXPECT_DOUBLE_EQ(r.backoff_base, 0.025);
  EXPECT_DOUBLE_EQ(r.backoff_max, 0.25);
  EXPECT_EQ(r.budget_percent, 0);
  EXPECT_EQ(r.budget_min_concurrency, 3);
}

TEST(ClusterPolicy, RetryTableIsRead) {
  std::vector<std::string> errors;
  auto c = parsed("retry = { retries = 3, per_try_timeout = 0.5, on_status = [502, 503], "
                  "backoff_base = 0.01, backoff_max = 0.1, budget_percent = 20, "
                  "budget_min_concurrency = 2 }",
                  &errors);
  ASSERT_TRUE(c) << errors[0];
  const RetryConfig& r = c->clusters[0].retry;
  EXPECT_EQ(r.retries, 3);
  EXPECT_DOUBLE_EQ(r.per_try_timeout, 0.5);
  EXPECT_EQ(r.on_status, (std::vector<int>{502, 503}));
  EXPECT_DOUBLE_EQ(r.backoff_base, 0.01);
  EXPECT_DOUBLE_EQ(r.backoff_max, 0.1);
  EXPECT_EQ(r.budget_percent, 20);
  EXPECT_EQ(r.budget_min_concurrency, 2);
}

TEST(ClusterPolicy, RetryRefusals) {
  Refusal cases[] = {
      {"retry = { on_status = [404] }", "t.toml:6:24: ", "on_status holds 5xx statuses"},
      {"retry = { on_status = 503 }", "t.toml:6:23: ", "on_status is a list"},
      {"retry = { retries = 11 }", "t.toml:6:21: ", "'retries' must be a number from 0 to 10"},
      {"retry = { budget_percent = 101 }", "t.toml:6:28: ", "'budget_percent' must be"},
      {"retry = { backoff_base = 1, backoff_max = 0.5 }",
       "t.toml:6:9: ", "backoff_max is less than backoff_base"},
      {"retry = { tries = 2 }", "t.toml:6:11: ", "tries"},
  };
  expect_refused(cases);
}

TEST(ClusterPolicy, Hedge) {
  std::vector<std::string> errors;
  auto c = parsed("hedge = { delay = 0.01, quantile = 0.95 }", &errors);
  ASSERT_TRUE(c) << errors[0];
  EXPECT_TRUE(c->clusters[0].hedge.enabled);
  EXPECT_DOUBLE_EQ(c->clusters[0].hedge.delay, 0.01);
  EXPECT_DOUBLE_EQ(c->clusters[0].hedge.quantile, 0.95);
  auto d = parsed("", &errors);
  EXPECT_FALSE(d->clusters[0].hedge.enabled);
  EXPECT_FALSE(parsed("hedge = { quantile = 1 }", &errors));
  EXPECT_TRUE(errors.back().starts_with("t.toml:6:22: ")) << errors.back();
  EXPECT_FALSE(parsed("hedge = { after = 1 }", &errors));
}

TEST(ClusterPolicy, HashOnAndSticky) {
  std::vector<std::string> errors;
  auto c = parsed("lb = \"maglev\"\nhash_on = [\"header:X-User\", \"query:id\"]\n"
                  "sticky = { cookie = \"srv\", max_age = 60, secure = true }",
                  &errors);
  ASSERT_TRUE(c) << errors[0];
  const ClusterConfig& k = c->clusters[0];
  EXPECT_EQ(k.lb, LoadBalancing::MAGLEV);
  ASSERT_EQ(k.hash_on.size(), 2u);
  EXPECT_EQ(http::to_string(k.hash_on[0]), "header:x-user");
  EXPECT_EQ(http::to_string(k.hash_on[1]), "query:id");
  EXPECT_TRUE(k.sticky.enabled);
  EXPECT_EQ(k.sticky.cookie, "srv");
  EXPECT_EQ(k.sticky.max_age, 60);
  EXPECT_TRUE(k.sticky.secure);
  EXPECT_TRUE(k.sticky.httponly);
  EXPECT_EQ(k.sticky.path, "/");
  auto d = parsed("lb = \"ring_hash\"", &errors);
  ASSERT_TRUE(d);
  ASSERT_EQ(d->clusters[0].hash_on.size(), 1u);
  EXPECT_EQ(d->clusters[0].hash_on[0].kind, http::KeyPart::CLIENT); // by default
}

TEST(ClusterPolicy, HashOnAndStickyRefusals) {
  Refusal cases[] = {
      {"hash_on = \"client\"", "t.toml:6:11: ", "hash_on is the key of lb"},
      {"lb = \"ring_hash\"\nhash_on = \"host\"", "t.toml:7:11: ", "hash_on is \"client\""},
      {"lb = \"maglev\"\nhash_on = []", "t.toml:7:11: ", "at least one part"},
      {"lb = \"hash\"", "t.toml:6:6: ", "\"ring_hash\" or \"maglev\""},
      {"sticky = { cookie = \"a b\" }", "t.toml:6:21: ", "cookie is a cookie name"},
      {"sticky = { path = \"x\" }", "t.toml:6:19: ", "path starts with '/'"},
      {"sticky = { path = \"/;x\" }", "t.toml:6:19: ", "has no ';'"},
  };
  expect_refused(cases);
}

} // namespace
} // namespace portico::config
