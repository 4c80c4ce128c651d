// Which series a route is counted in (issue 23, item 4): its own below
// [metrics] route_series_limit, a stat_name's shared one, or its cluster's past the limit, so
// that 10,000 hosts do not make 10,000 sets of series.
#include "config/config_loader.h"

#include <gtest/gtest.h>

namespace portico::config {
namespace {

const std::string head = "[[listener]]\naddress = \"127.0.0.1:8080\"\n"
                         "[[cluster]]\nname = \"a\"\nendpoints = [\"127.0.0.1:1\"]\n"
                         "[[cluster]]\nname = \"b\"\nendpoints = [\"127.0.0.1:2\"]\n";

Config load(const std::string& text, std::vector<std::string>* errors = nullptr) {
  std::vector<std::string> mine;
  auto c = parse_config(head + text, "t.toml", errors ? errors : &mine);
  if (!errors)
    EXPECT_TRUE(c) << (mine.empty() ? "" : mine[0]);
  return c ? std::move(*c) : Config{};
}

// Each group as "name:cluster", then each route's group index.
std::pair<std::vector<std::string>, std::vector<size_t>> groups(const Config& c) {
  std::pair<std::vector<std::string>, std::vector<size_t>> out;
  for (const RouteStatGroup& g : c.route_stats)
    out.first.push_back(g.name + ":" + g.cluster);
  for (const RouteConfig& r : c.routes)
    out.second.push_back(r.stat_group);
  return out;
}

std::string hosts(int n, const std::string& cluster, const std::string& extra = "") {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += "[[route]]\nhost = \"h" + std::to_string(i) + "." + cluster + "\"\ncluster = \"" +
           cluster + "\"\n" + extra;
  return out;
}

TEST(RouteStats, BelowTheLimitEachRouteHasItsOwn) {
  Config c = load(hosts(2, "a") + "[[route]]\nredirect = { scheme = \"https\" }\n");
  EXPECT_EQ(groups(c).first, (std::vector<std::string>{"h0.a/:a", "h1.a/:a", "*/:", "none:none"}));
  EXPECT_EQ(groups(c).second, (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(c.warnings.empty());
}

TEST(RouteStats, AStatNameGroupsRoutesPerCluster) {
  Config c =
      load(hosts(2, "a", "stat_name = \"tenants\"\n") + hosts(1, "b", "stat_name = \"tenants\"\n") +
           "[[route]]\nname = \"api\"\ncluster = \"a\"\n");
  // One label on two clusters: the live stats tell them apart by name.
  EXPECT_EQ(groups(c).first,
            (std::vector<std::string>{"tenants@a:a", "tenants@b:b", "api:a", "none:none"}));
  EXPECT_EQ(groups(c).second, (std::vector<size_t>{0, 0, 1, 2}));
  EXPECT_EQ(c.route_stats[0].label, "tenants");
  EXPECT_EQ(c.route_stats[1].cluster_index, 1u);
  // The access log still names the route itself.
  EXPECT_EQ(c.routes[0].label, "h0.a/");
}

TEST(RouteStats, PastTheLimitRoutesWithoutAStatNameCountPerCluster) {
  Config c = load("[metrics]\nroute_series_limit = 2\n" + hosts(2, "a") + hosts(1, "b") +
                  hosts(1, "b", "stat_name = \"vip\"\n"));
  EXPECT_EQ(groups(c).first,
            (std::vector<std::string>{"(cluster)@a:a", "(cluster)@b:b", "vip:b", "none:none"}));
  EXPECT_EQ(groups(c).second, (std::vector<size_t>{0, 0, 1, 2}));
  EXPECT_EQ(c.route_stats[0].label, "(cluster)");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("3 routes without a stat_name, more than [metrics] "
                               "route_series_limit (2)"),
            std::string::npos)
      << c.warnings[0];
  // At the limit they keep their own.
  EXPECT_EQ(load("[metrics]\nroute_series_limit = 3\n" + hosts(2, "a") + hosts(1, "b"))
                .route_stats.size(),
            4u);
  // 0: always per cluster, and nothing to warn about.
  Config zero = load("[metrics]\nroute_series_limit = 0\n" + hosts(2, "a"));
  EXPECT_EQ(groups(zero).first, (std::vector<std::string>{"(cluster):a", "none:none"}));
  EXPECT_TRUE(zero.warnings.empty());
}

TEST(RouteStats, AStatNameSpeltAsARouteLabelIsAnError) {
  std::vector<std::string> errors;
  EXPECT_FALSE(parse_config(head +
                                "[[route]]\nname = \"api\"\ncluster = \"a\"\n"
                                "[[route]]\nhost = \"x\"\ncluster = \"a\"\nstat_name = \"api\"\n",
                            "t.toml", &errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].rfind("t.toml:15:13:", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("stat_name 'api' is a route's label"), std::string::npos) << errors[0];
  errors.clear();
  EXPECT_FALSE(
      parse_config(head + "[[route]]\ncluster = \"a\"\nstat_name = \"\"\n", "t.toml", &errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("stat_name is a non-empty string"), std::string::npos) << errors[0];
}

} // namespace
} // namespace portico::config
