// A route's `rate_limit`: a table or a list of them; the rate as a number or nginx's "10r/s"
// and "600r/m"; every bad value an error at its FILE:LINE:COL; limits of one name share their
// table.
#include "filters/rate_limit_settings.h"
#include "route_config.h"

#include <gtest/gtest.h>

namespace portico::filters {
namespace {

const RateLimitSettings* load(std::string_view value, std::vector<std::string>& errors,
                              std::optional<config::Config>& c) {
  c = load_route("cluster = \"app\"\nrate_limit = " + std::string(value), &errors);
  return c ? c->routes[0].settings_for<RateLimitSettings>("rate_limit") : nullptr;
}

std::string refused(std::string_view value) {
  std::vector<std::string> errors;
  std::optional<config::Config> c;
  EXPECT_FALSE(load(value, errors, c)) << value;
  return errors.empty() ? "" : errors.front();
}

TEST(RateLimitSettings, RatesKeysAndDefaults) {
  std::vector<std::string> errors;
  std::optional<config::Config> c;
  const auto* s =
      load("[{ name = \"a\", rate = \"600r/m\", burst = 5, key = [\"client\", \"header:X-Key\", "
           "\"cookie:sid\"], exempt = [\"10.0.0.0/8\"] },\n { name = \"b\", rate = 2.5, nodelay = "
           "true, dry_run = true, status = 503 }]",
           errors, c);
  ASSERT_TRUE(s) << errors[0];
  ASSERT_EQ(s->limits.size(), 2u);
  const auto& a = s->limits[0];
  EXPECT_EQ(a.interval_ns, 100'000'000); // 600 a minute: one per 100 ms
  EXPECT_EQ(a.per_window, 600);
  EXPECT_EQ(a.window_s, 60);
  EXPECT_EQ(a.burst, 5);
  ASSERT_EQ(a.key.size(), 3u);
  EXPECT_EQ(a.key[1].name, "x-key");
  EXPECT_EQ(a.exempt.size(), 1u);
  EXPECT_EQ(a.status, 429);
  const auto& b = s->limits[1];
  EXPECT_EQ(b.interval_ns, 400'000'000);
  EXPECT_TRUE(b.nodelay && b.dry_run);
  EXPECT_EQ(b.status, 503);
  ASSERT_EQ(b.key.size(), 1u); // the client by default
  EXPECT_EQ(b.key[0].kind, http::KeyPart::CLIENT);
}

TEST(RateLimitSettings, ALimitsNameIsItsTable) {
  std::vector<std::string> errors;
  std::optional<config::Config> c1, c2;
  const auto* one = load(R"({ name = "shared-name", rate = 1 })", errors, c1);
  const auto* two = load(R"({ name = "shared-name", rate = 5 })", errors, c2);
  ASSERT_TRUE(one && two);
  EXPECT_EQ(one->limits[0].table, two->limits[0].table); // a reload keeps what was spent
}

TEST(RateLimitSettings, ASharedLimitNamesItsRedis) {
  std::vector<std::string> errors;
  std::optional<config::Config> c;
  const auto* s = load(R"({ name = "api", rate = "100r/s", burst = 10, shared = { redis = )"
                       R"("127.0.0.1:6380", timeout = 0.02, failure = "closed", batch = 7, )"
                       R"(password = "pw" } })",
                       errors, c);
  ASSERT_TRUE(s) << errors[0];
  const auto& l = s->limits[0];
  ASSERT_TRUE(l.shared);
  EXPECT_FALSE(l.table); // its budget is in Redis
  EXPECT_TRUE(l.nodelay);
  EXPECT_EQ(l.shared->redis.host, "127.0.0.1");
  EXPECT_EQ(l.shared->redis.port, 6380);
  EXPECT_EQ(l.shared->redis.password, "pw");
  EXPECT_DOUBLE_EQ(l.shared->timeout_s, 0.02);
  EXPECT_FALSE(l.shared->fail_open);
  EXPECT_EQ(l.shared->batch, 7);
  EXPECT_EQ(l.shared->prefix, "portico:rl:api:");
  const auto* u =
      load(R"({ name = "u", rate = 1, shared = { redis = "unix:/run/redis.sock" } })", errors, c);
  ASSERT_TRUE(u) << errors[0];
  EXPECT_EQ(u->limits[0].shared->redis.unix_path, "/run/redis.sock");
  EXPECT_TRUE(u->limits[0].shared->fail_open);
}

TEST(RateLimitSettings, ABadSharedLimitIsRefusedWhereItIs) {
  std::string e = refused(R"({ name = "a", rate = 1, shared = { redis = "redis.local:6379" } })");
  EXPECT_TRUE(e.starts_with("c.toml:8:")) << e;
  EXPECT_NE(e.find("is a name"), std::string::npos) << e;
  EXPECT_NE(refused(R"({ name = "a", rate = 1, shared = { redis = "127.0.0.1" } })").find("redis"),
            std::string::npos);
  EXPECT_NE(refused(R"({ name = "a", rate = 1, shared = {} })").find("'redis' is required"),
            std::string::npos);
  EXPECT_NE(refused(R"({ name = "a", rate = 1, shared = { redis = "127.0.0.1:1", failure = )"
                    R"("maybe" } })")
                .find("failure"),
            std::string::npos);
  EXPECT_NE(refused(R"({ name = "a", rate = 1, shared = { redis = "127.0.0.1:1", ttl = 1 } })")
                .find("ttl"),
            std::string::npos);
  EXPECT_NE(refused(R"({ name = "a", rate = 1, delay = 2, shared = { redis = "127.0.0.1:1" } })")
                .find("no delay or nodelay"),
            std::string::npos);
  EXPECT_NE(refused(R"({ name = "a", rate = 1, shared = "127.0.0.1:1" })").find("is a table"),
            std::string::npos);
}

TEST(RateLimitSettings, BadValuesAreRefusedWhereTheyAre) {
  std::string e = refused(R"({ name = "a", rate = "10r/h" })");
  EXPECT_TRUE(e.starts_with("c.toml:8:")) << e;
  EXPECT_NE(e.find("rate is requests per second"), std::string::npos) << e;
  EXPECT_NE(refused(R"({ name = "a" })").find("needs a rate"), std::string::npos);
  EXPECT_NE(refused(R"({ rate = 1 })").find("name"), std::string::npos);
  EXPECT_NE(refused(R"({ name = "a", rate = 0 })").find("at least one an hour"), std::string::npos);
  EXPECT_NE(refused(R"({ name = "a", rate = 1e-7 })").find("at least one an hour"),
            std::string::npos);
  EXPECT_NE(refused(R"({ name = "a", rate = 1, key = ["host"] })").find("key parts"),
            std::string::npos);
  EXPECT_NE(refused(R"({ name = "a", rate = 1, exempt = ["10.0.0.0/33"] })").find("exempt"),
            std::string::npos);
  EXPECT_NE(refused(R"({ name = "a", rate = 1, colour = 1 })").find("colour"), std::string::npos);
  EXPECT_NE(refused(R"([{ name = "a", rate = 1 }, { name = "a", rate = 2 }])").find("two rate"),
            std::string::npos);
  EXPECT_NE(refused("true").find("is a table"), std::string::npos);
}

} // namespace
} // namespace portico::filters
