// A route's mirror table: read, dumped keys' defaults, and refused with FILE:LINE:COL.
#include "config/config_loader.h"

#include <gtest/gtest.h>

namespace portico::config {
namespace {

std::string with_route_line(std::string_view line) {
  std::string out = "[[listener]]\naddress = \"127.0.0.1:8080\"\n[[cluster]]\nname = \"app\"\n"
                    "endpoints = [\"127.0.0.1:9000\"]\n[[cluster]]\nname = \"shadow\"\n"
                    "endpoints = [\"127.0.0.1:9001\"]\n[[route]]\ncluster = \"app\"\n";
  out += line;
  out += "\n";
  return out;
}

TEST(RouteMirror, IsReadWithDefaults) {
  std::vector<std::string> errors;
  auto c = parse_config(with_route_line("mirror = { cluster = \"shadow\" }"), "t.toml", &errors);
  ASSERT_TRUE(c) << errors[0];
  const RouteConfig& r = c->routes[0];
  EXPECT_TRUE(r.has_mirror);
  EXPECT_EQ(r.mirror.cluster_index, 1u);
  EXPECT_EQ(r.mirror.fraction, 1);
  EXPECT_EQ(r.mirror.host_suffix, "-shadow");
  EXPECT_EQ(r.mirror.max_body, 1u << 20);
  c = parse_config(with_route_line("mirror = { cluster = \"shadow\", fraction = 0.1, "
                                   "host_suffix = \"-copy\", max_body = 0 }"),
                   "t.toml", &errors);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->routes[0].mirror.fraction, 0.1);
  EXPECT_EQ(c->routes[0].mirror.host_suffix, "-copy");
  EXPECT_EQ(c->routes[0].mirror.max_body, 0u);
}

TEST(RouteMirror, Refusals) {
  struct Case {
    const char* line;
    const char* at;
    const char* says;
  } cases[] = {
      {"mirror = { cluster = \"nope\" }", "t.toml:11:22: ", "no cluster named 'nope'"},
      {"mirror = { fraction = 0.5 }", "t.toml:11:10: ", "cluster"},
      {"mirror = { cluster = \"shadow\", fraction = 2 }", "t.toml:11:43: ", "'fraction'"},
      {"mirror = { cluster = \"shadow\", host_suffix = \"a:b\" }",
       "t.toml:11:46: ", "host_suffix is part of a host name"},
      {"websocket = true\nmirror = { cluster = \"shadow\" }",
       "t.toml:12:10: ", "a route with websocket is not mirrored"},
  };
  for (const auto& k : cases) {
    std::vector<std::string> errors;
    EXPECT_FALSE(parse_config(with_route_line(k.line), "t.toml", &errors)) << k.line;
    ASSERT_FALSE(errors.empty()) << k.line;
    EXPECT_TRUE(errors[0].starts_with(k.at)) << errors[0];
    EXPECT_NE(errors[0].find(k.says), std::string::npos) << errors[0];
  }
}

} // namespace
} // namespace portico::config
