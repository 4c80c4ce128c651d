#include "config/config_loader.h"

#include <gtest/gtest.h>

namespace portico::config {
namespace {

std::optional<Config> parse(std::string_view text, std::vector<std::string>* errors) {
  return parse_config(text, "test.toml", errors);
}

constexpr std::string_view kMinimal = R"(
[server]
workers = 2

[[listener]]
address = "127.0.0.1:8080"

[admin]
address = "127.0.0.1:9901"

[[cluster]]
name = "app"
endpoints = ["unix:/dev/shm/app.sock"]

[[route]]
path_prefix = "/"
cluster = "app"
)";

TEST(ConfigLoader, MinimalFormFromTheIssue) {
  std::vector<std::string> errors;
  auto c = parse(kMinimal, &errors);
  ASSERT_TRUE(c) << (errors.empty() ? "" : errors[0]);
  EXPECT_EQ(c->server.workers, 2);
  ASSERT_EQ(c->listeners.size(), 1u);
  EXPECT_EQ(c->listeners[0].address.port, 8080);
  EXPECT_FALSE(c->listeners[0].tls_enabled);
  EXPECT_EQ(c->admin.address.port, 9901);
  ASSERT_EQ(c->clusters.size(), 1u);
  EXPECT_EQ(c->clusters[0].endpoints[0], "unix:/dev/shm/app.sock");
  ASSERT_EQ(c->routes.size(), 1u);
  EXPECT_EQ(c->routes[0].cluster_index, 0u);
}

TEST(ConfigLoader, SyntaxErrorHasFileLineColumn) {
  std::vector<std::string> errors;
  EXPECT_FALSE(parse("[server]\nworkers = = 2\n", &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("test.toml:2:", 0), 0u) << errors[0];
}

TEST(ConfigLoader, ReportsEveryErrorWithPosition) {
  std::vector<std::string> errors;
  EXPECT_FALSE(parse(R"([server]
workers = "two"
colour = "blue"

[[listener]]
address = "nowhere"

[[cluster]]
name = "app"
endpoints = ["no-port", "unix:relative"]

[[route]]
cluster = "missing"
)",
                     &errors));
  ASSERT_GE(errors.size(), 5u);
  auto has = [&](std::string_view prefix, std::string_view text) {
    for (const auto& e : errors)
      if (e.starts_with(prefix) && e.find(text) != std::string::npos)
        return true;
    return false;
  };
  EXPECT_TRUE(has("test.toml:2:", "workers"));
  EXPECT_TRUE(has("test.toml:3:", "unknown key 'colour'"));
  EXPECT_TRUE(has("test.toml:6:", "HOST:PORT"));
  EXPECT_TRUE(has("test.toml:10:", "no-port"));
  EXPECT_TRUE(has("test.toml:10:", "unix:relative"));
  EXPECT_TRUE(has("test.toml:13:", "no cluster named 'missing'"));
}

TEST(ConfigLoader, RequiresListenerAndRoute) {
  std::vector<std::string> errors;
  EXPECT_FALSE(parse("[server]\nworkers = 1\n", &errors));
  bool listener = false, route = false;
  for (const auto& e : errors) {
    listener |= e.find("[[listener]]") != std::string::npos;
    route |= e.find("[[route]]") != std::string::npos;
  }
  EXPECT_TRUE(listener);
  EXPECT_TRUE(route);
}

TEST(ConfigLoader, DuplicateClusterAndUnreadableCertificate) {
  std::vector<std::string> errors;
  EXPECT_FALSE(parse(R"([[listener]]
address = "127.0.0.1:8443"
tls = { certificate = "/nonexistent/cert.pem", private_key = "/nonexistent/key.pem" }
[[cluster]]
name = "a"
endpoints = ["127.0.0.1:9000"]
[[cluster]]
name = "a"
endpoints = ["127.0.0.1:9001"]
[[route]]
cluster = "a"
)",
                     &errors));
  bool dup = false, cert = false;
  for (const auto& e : errors) {
    dup |= e.find("defined twice") != std::string::npos;
    cert |= e.find("/nonexistent/cert.pem") != std::string::npos && e.starts_with("test.toml:3:");
  }
  EXPECT_TRUE(dup);
  EXPECT_TRUE(cert);
}

TEST(ConfigLoader, ClusterOptionsAndRanges) {
  std::vector<std::string> errors;
  auto c = parse(R"([[listener]]
address = "[::1]:8080"
[[cluster]]
name = "app"
endpoints = ["backend.example:80", "[::1]:9000"]
max_connections = 8
queue_timeout = 2.5
retry_on_reset = false
retry_non_idempotent = true
[[route]]
host = "*.example.com"
path_prefix = "/api/"
cluster = "app"
)",
                 &errors);
  ASSERT_TRUE(c) << errors[0];
  EXPECT_EQ(c->listeners[0].address.host, "::1");
  EXPECT_EQ(c->clusters[0].max_connections, 8);
  EXPECT_DOUBLE_EQ(c->clusters[0].queue_timeout, 2.5);
  EXPECT_FALSE(c->clusters[0].retry_on_reset);
  EXPECT_TRUE(c->clusters[0].retry_non_idempotent);
  EXPECT_EQ(c->routes[0].host, "*.example.com");

  errors.clear();
  EXPECT_FALSE(parse(R"([[listener]]
address = "127.0.0.1:1"
[[cluster]]
name = "app"
endpoints = ["127.0.0.1:2"]
connect_timeout = -1
[[route]]
cluster = "app"
path_prefix = "api"
)",
                     &errors));
  EXPECT_EQ(errors.size(), 2u);
}

} // namespace
} // namespace portico::config
