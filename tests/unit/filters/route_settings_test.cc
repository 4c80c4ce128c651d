// A filter with a [[route]] key of its own: one file (its filter, factory and settings reader)
// and one registry line. The loader hands the key's value to the filter's reader, checks it with
// FILE:LINE:COL like a built-in key, keeps what the reader made on the route, and refuses the
// key when no filter claims it. The filter here is the test's own, as a new one would be.
#include "config/config_loader.h"
#include "filters/registry.h"
#include "filters/route_factory.h"

#include <gtest/gtest.h>
#include <set>

namespace portico::filters {
namespace {

// ---- what filters/stamp.cc would hold -------------------------------------------------------
struct StampSettings {
  std::string value;
};

class Stamp final : public routing::Filter {
public:
  explicit Stamp(const config::RouteConfig&) {}
};

std::unique_ptr<routing::FilterFactory> make_stamp(const config::RouteConfig* r,
                                                   metrics::WorkerMetrics&) {
  return r && r->settings_for<StampSettings>("stamp") ? factory_for<Stamp>(*r) : nullptr;
}

std::shared_ptr<const void> read_stamp(config::Reader& r, const toml::node& v,
                                       const std::string& where) {
  const toml::table* t = v.as_table();
  if (!t) {
    r.error(v.source(), where + " is a table: stamp = { value = \"...\" }");
    return nullptr;
  }
  r.only_keys(*t, {"value"}, where);
  auto s = std::make_shared<StampSettings>();
  if (!r.get_string(*t, "value", s->value, where, true))
    return nullptr;
  return s;
}

const config::RouteSettingsReader settings_stamp{"stamp", read_stamp};
// ---- and its registry line: X(stamp, OWN_KEY) -----------------------------------------------
constexpr routing::FilterKind kKinds[] = {{"stamp", make_stamp, &settings_stamp}};

std::string config_with(std::string_view route_extra) {
  return std::string(R"(
[[listener]]
address = "127.0.0.1:8080"

[[cluster]]
name = "app"
endpoints = ["unix:/dev/shm/app.sock"]

[[route]]
path_prefix = "/stamped"
cluster = "app"
)") + std::string(route_extra) +
         R"(
[[route]]
cluster = "app"
)";
}

TEST(RouteSettings, TheClaimingFiltersReaderFillsTheRoute) {
  auto readers = route_settings_of(kKinds);
  ASSERT_EQ(readers.size(), 1u);
  std::vector<std::string> errors;
  auto c =
      config::parse_config(config_with("stamp = { value = \"x\" }\n"), "s.toml", &errors, readers);
  ASSERT_TRUE(c) << (errors.empty() ? "" : errors[0]);
  ASSERT_EQ(c->routes.size(), 2u);
  const StampSettings* s = c->routes[0].settings_for<StampSettings>("stamp");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->value, "x");
  EXPECT_EQ(c->routes[1].settings_for<StampSettings>("stamp"), nullptr);
  // The factory is made for the route that has the key only.
  metrics::WorkerMetrics shard(*c, nullptr);
  EXPECT_TRUE(kKinds[0].make(&c->routes[0], shard));
  EXPECT_FALSE(kKinds[0].make(&c->routes[1], shard));
  EXPECT_FALSE(kKinds[0].make(nullptr, shard));
}

TEST(RouteSettings, ABadValueIsReportedWhereItIs) {
  auto readers = route_settings_of(kKinds);
  std::vector<std::string> errors;
  EXPECT_FALSE(config::parse_config(config_with("stamp = 3\n"), "s.toml", &errors, readers));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "s.toml:12:9: [[route]] stamp is a table: stamp = { value = \"...\" }");
  errors.clear();
  EXPECT_FALSE(
      config::parse_config(config_with("stamp = { valeu = \"x\" }\n"), "s.toml", &errors, readers));
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0], "s.toml:12:11: unknown key 'valeu' in [[route]] stamp");
}

TEST(RouteSettings, AKeyNoFilterClaimsIsUnknown) {
  std::vector<std::string> errors;
  EXPECT_FALSE(config::parse_config(config_with("stamp = { value = \"x\" }\n"), "s.toml",
                                    &errors)); // no readers: as config/ alone sees it
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "s.toml:12:1: unknown key 'stamp' in [[route]]");
}

TEST(RouteSettings, TheProxysFiltersClaimDistinctKeys) {
  std::set<std::string_view> keys;
  for (const auto& s : route_settings()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    EXPECT_NE(s.read, nullptr);
  }
}

} // namespace
} // namespace portico::filters
