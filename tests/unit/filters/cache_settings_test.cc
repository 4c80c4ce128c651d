// A route's `cache`: the directory on disk must be one the proxy can use, found when the
// configuration is read (FILE:LINE:COL), not at the first response stored; what a response
// that sets a cookie does.
#include "filters/cache_settings.h"
#include "route_config.h"

#include <filesystem>
#include <gtest/gtest.h>
#include <unistd.h>

namespace portico::filters {
namespace {

std::string refused(std::string_view cache) {
  std::vector<std::string> errors;
  auto c = load_route("cluster = \"app\"\ncache = " + std::string(cache), &errors);
  EXPECT_FALSE(c) << cache;
  return errors.empty() ? "" : errors.front();
}

TEST(CacheSettings, ADiskDirectoryIsMadeAndItsSizeRead) {
  auto dir = std::filesystem::temp_directory_path() /
             ("portico-cache-settings-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::vector<std::string> errors;
  auto c = load_route(
      "cluster = \"app\"\ncache = { disk = \"" + dir.string() + "/\", disk_size = 5e6 }", &errors);
  ASSERT_TRUE(c) << errors[0];
  const auto* s = c->routes[0].settings_for<CacheSettings>("cache");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->disk, dir.string()); // without its trailing slash
  EXPECT_EQ(s->disk_size, 5'000'000u);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  std::filesystem::remove_all(dir);
}

TEST(CacheSettings, ADiskDirectoryThatCannotBeUsedIsRefused) {
  std::string e = refused("{ disk = \"relative/dir\" }");
  EXPECT_TRUE(e.starts_with("c.toml:8:")) << e;
  EXPECT_NE(e.find("absolute path"), std::string::npos) << e;
  e = refused("{ disk = \"/proc/version\" }");
  EXPECT_NE(e.find("is not a directory"), std::string::npos) << e;
  e = refused("{ disk = \"/nonexistent-parent/cache\" }");
  EXPECT_NE(e.find("cannot make"), std::string::npos) << e;
  e = refused("{ disk = \"/tmp\", disk_size = 1000 }");
  EXPECT_NE(e.find("disk_size"), std::string::npos) << e;
}

TEST(CacheSettings, AResponseThatSetsACookieIsPassedUnlessTheRouteStoresIt) {
  std::vector<std::string> errors;
  auto c = load_route("cluster = \"app\"\ncache = true", &errors);
  ASSERT_TRUE(c) << errors[0];
  EXPECT_EQ(c->routes[0].settings_for<CacheSettings>("cache")->set_cookie,
            CacheSettings::SetCookie::PASS);
  c = load_route("cluster = \"app\"\ncache = { set_cookie = \"store\" }", &errors);
  ASSERT_TRUE(c) << errors[0];
  EXPECT_EQ(c->routes[0].settings_for<CacheSettings>("cache")->set_cookie,
            CacheSettings::SetCookie::STORE);
  std::string e = refused("{ set_cookie = \"strip\" }");
  EXPECT_TRUE(e.starts_with("c.toml:8:")) << e;
  EXPECT_NE(e.find("set_cookie is \"pass\" or \"store\""), std::string::npos) << e;
}

} // namespace
} // namespace portico::filters
