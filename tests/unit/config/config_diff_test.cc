#include "config/config_diff.h"
#include "config/config_loader.h"

#include <gtest/gtest.h>

namespace portico::config {
namespace {

Config parse(std::string_view text) {
  std::vector<std::string> errors;
  auto c = parse_config(text, "d.toml", &errors);
  EXPECT_TRUE(c) << (errors.empty() ? "" : errors.front());
  return c ? *c : Config{};
}

constexpr std::string_view kOld = R"(
[server]
workers = 2
[[listener]]
address = "127.0.0.1:8080"
[[cluster]]
name = "a"
endpoints = ["unix:/run/a.sock"]
[[cluster]]
name = "b"
endpoints = ["127.0.0.1:9000"]
[[route]]
cluster = "a"
)";

TEST(ConfigDiff, AClusterIsKeptOnlyWhenEverySettingIsEqual) {
  Config old = parse(kOld);
  Config next = parse(R"(
[server]
workers = 2
[[listener]]
address = "127.0.0.1:8080"
[[cluster]]
name = "b"
endpoints = ["127.0.0.1:9000"]
connect_timeout = 1
[[cluster]]
name = "new"
endpoints = ["127.0.0.1:9001"]
[[cluster]]
name = "a"
endpoints = ["unix:/run/a.sock"]
[[route]]
cluster = "a"
)");
  EXPECT_EQ(kept_clusters(old, next), (std::vector<int>{-1, -1, 0}));
  EXPECT_EQ(kept_clusters(old, old), (std::vector<int>{0, 1}));
}

TEST(ConfigDiff, SettingsOnlyARestartAppliesAreNamed) {
  Config old = parse(kOld);
  EXPECT_TRUE(restart_only_changes(old, old).empty());
  std::string text(kOld);
  text.replace(text.find("workers = 2"), 11, "workers = 4");
  text += "[admin]\naddress = \"127.0.0.1:9911\"\n[log]\nfile = \"/tmp/e.log\"\n";
  auto changes = restart_only_changes(old, parse(text));
  EXPECT_EQ(changes, (std::vector<std::string>{"[server] workers changed",
                                               "[admin] address changed", "[log] file changed"}));
}

TEST(ConfigDiff, SocketKeysIgnoreHowTheAddressWasWritten) {
  auto tcp = core::parse_listen_address("127.0.0.1:80");
  auto unix_socket = core::parse_listen_address("unix:/run/p.sock:0660");
  ASSERT_TRUE(tcp && unix_socket);
  EXPECT_EQ(socket_key(*tcp), "tcp:127.0.0.1:80");
  EXPECT_EQ(socket_key(*unix_socket), "unix:/run/p.sock");
}

} // namespace
} // namespace portico::config

namespace portico::config {
namespace {

TEST(ConfigDiff, RoutesKeepTheirCountersWhileTheListenersStay) {
  Config old = parse(kOld);
  std::string text(kOld);
  text += "[[route]]\npath_prefix = \"/api\"\ncluster = \"b\"\n";
  Config next = parse(text);
  // The old catch-all route, then the new one; the unmatched requests' entry last.
  EXPECT_EQ(kept_routes(old, next), (std::vector<int>{0, -1, 1}));
  text.replace(text.find("127.0.0.1:8080"), 14, "127.0.0.1:8081");
  EXPECT_EQ(kept_routes(old, parse(text)), (std::vector<int>{-1, -1, -1}));
}

} // namespace
} // namespace portico::config
