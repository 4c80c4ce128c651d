// A route's `static`: root or alias, the defaults, every key, and each bad value (or bad
// combination with the rest of the route) an error at its FILE:LINE:COL.
#include "filters/static_settings.h"
#include "route_config.h"

#include <gtest/gtest.h>

namespace portico::filters {
namespace {

using compression::Encoding;
using Symlinks = server::StaticOptions::Symlinks;

// A route with static = VALUE and the route keys given before it.
std::optional<config::Config> load(std::string_view value, std::vector<std::string>* errors,
                                   std::string_view route_keys = "") {
  return load_route(std::string(route_keys) + "static = " + std::string(value), errors);
}

const StaticSettings* settings(const config::Config& c) {
  return c.routes[0].settings_for<StaticSettings>("static");
}

TEST(StaticSettings, RootTakesTheDefaults) {
  std::vector<std::string> errors;
  auto c = load(R"({ root = "/tmp" })", &errors);
  ASSERT_TRUE(c) << errors[0];
  const auto* s = settings(*c);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->alias);
  EXPECT_EQ(s->options.root, "/tmp");
  EXPECT_EQ(s->options.index, std::vector<std::string>{"index.html"});
  EXPECT_TRUE(s->options.try_files.empty());
  EXPECT_FALSE(s->options.dotfiles);
  EXPECT_EQ(s->options.symlinks, Symlinks::WITHIN_ROOT);
  EXPECT_TRUE(s->options.precompressed.empty());
  EXPECT_EQ(s->options.expires, -1);
  EXPECT_TRUE(c->routes[0].cluster.empty()); // it answers: no cluster needed
}

TEST(StaticSettings, EveryKey) {
  std::vector<std::string> errors;
  auto c = load(R"({ alias = "/tmp/", index = ["index.htm", "default.html"],)"
                R"( try_files = ["$uri", "$uri.html", "$uri/", "@upstream"], dotfiles = true,)"
                R"( symlinks = "never", precompressed = ["br", "gzip"],)"
                R"( cache_control = "public, max-age=600", expires = 600, cache_bytes = 1000,)"
                R"( cache_entries = 10, cache_max_file = 100, open_files = 3, revalidate = 5 })",
                &errors, "path_prefix = \"/s/\"\ncluster = \"app\"\n");
  ASSERT_TRUE(c) << errors[0];
  const auto& o = settings(*c)->options;
  EXPECT_TRUE(settings(*c)->alias);
  EXPECT_EQ(o.index, (std::vector<std::string>{"index.htm", "default.html"}));
  EXPECT_EQ(o.try_files.back(), "@upstream");
  EXPECT_TRUE(o.dotfiles);
  EXPECT_EQ(o.symlinks, Symlinks::NEVER);
  EXPECT_EQ(o.precompressed, (std::vector<Encoding>{Encoding::BROTLI, Encoding::GZIP}));
  EXPECT_EQ(o.cache_control, "public, max-age=600");
  EXPECT_EQ(o.expires, 600);
  EXPECT_EQ(o.cache_bytes, 1000u);
  EXPECT_EQ(o.cache_entries, 10u);
  EXPECT_EQ(o.max_cached_file, 100u);
  EXPECT_EQ(o.max_open_files, 3u);
  EXPECT_EQ(o.revalidate_after, 5);
}

TEST(StaticSettings, PrecompressedTrueLooksForEveryCoding) {
  std::vector<std::string> errors;
  auto c = load(R"({ root = "/tmp", precompressed = true })", &errors);
  ASSERT_TRUE(c) << errors[0];
  EXPECT_EQ(settings(*c)->options.precompressed,
            (std::vector<Encoding>{Encoding::ZSTD, Encoding::BROTLI, Encoding::GZIP}));
}

TEST(StaticSettings, BadValuesAreErrorsWhereTheyAre) {
  struct Case {
    const char* value;
    const char* route_keys;
    const char* error;
  } cases[] = {
      {"\"/tmp\"", "",
       "c.toml:7:10: [[route]] static: 'static' must be a table ({ root = "
       "\"/srv/www\" })"},
      {"{ index = [] }", "", "c.toml:7:10: [[route]] static: one of 'root' and 'alias'"},
      {R"({ root = "/tmp", alias = "/tmp" })", "",
       "c.toml:7:10: [[route]] static: one of 'root' and 'alias'"},
      {R"({ root = "/no/such/dir" })", "",
       "c.toml:7:19: [[route]] static: '/no/such/dir' is not a directory"},
      {R"({ root = "/tmp", symlinks = "yes" })", "",
       "c.toml:7:38: [[route]] static: symlinks is \"within_root\", \"never\" or \"anywhere\""},
      {R"({ root = "/tmp", try_files = ["=404", "$uri"] })", "",
       "c.toml:7:39: [[route]] static: '=404': =CODE (400-599) comes last, as the fallback"},
      {R"({ root = "/tmp", try_files = ["index.html"] })", "",
       "c.toml:7:39: [[route]] static: 'index.html' is a path (\"/index.html\"), \"$uri\", "
       "\"$uri/\", \"=CODE\" or \"@upstream\""},
      {R"({ root = "/tmp", index = ["a/b.html"] })", "",
       "c.toml:7:35: [[route]] static: index names a file: 'a/b.html'"},
      {R"({ root = "/tmp", precompressed = ["deflate"] })", "",
       "c.toml:7:43: [[route]] static: unknown encoding 'deflate' (zstd, br and gzip are known)"},
      {R"({ root = "/tmp", try_files = ["$uri", "@upstream"] })", "",
       "c.toml:6:1: [[route]]: 'cluster' is required"},
      {R"({ root = "/tmp" })", "cluster = \"app\"\n",
       "c.toml:8:10: [[route]] static: the route answers from files: its cluster would never "
       "be asked (end try_files with \"@upstream\" for that)"},
      {R"({ alias = "/tmp" })", "path_exact = \"/x\"\n",
       "c.toml:8:10: [[route]] static: alias needs the route's path_prefix (root serves the "
       "whole path)"},
      {R"({ root = "/tmp" })", "path_prefix = \"/a/\"\nprefix_rewrite = \"/b/\"\n",
       "c.toml:9:10: [[route]] static: not with prefix_rewrite (alias maps a prefix to a "
       "directory)"},
      {R"({ root = "/tmp", cache_control = "a\nb" })", "",
       "c.toml:7:43: [[route]] static: cache_control is one line"},
      {R"({ root = "/tmp", color = 1 })", "",
       "c.toml:7:27: unknown key 'color' in [[route]] static"},
  };
  for (const auto& k : cases) {
    std::vector<std::string> errors;
    EXPECT_FALSE(load(k.value, &errors, k.route_keys)) << k.value;
    // A value not read leaves a route with no answer of its own: 'cluster' is then missing too.
    ASSERT_GE(errors.size(), 1u) << k.value;
    EXPECT_EQ(errors[0], k.error);
  }
}

} // namespace
} // namespace portico::filters
