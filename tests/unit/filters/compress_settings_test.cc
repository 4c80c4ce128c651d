// A route's `compress`: true takes the defaults, a table chooses, and every bad value is an
// error at its FILE:LINE:COL; the media type patterns.
#include "filters/compress_settings.h"
#include "route_config.h"

#include <gtest/gtest.h>

namespace portico::filters {
namespace {

using compression::Encoding;

std::optional<config::Config> load(std::string_view compress, std::vector<std::string>* errors) {
  return load_route("cluster = \"app\"\ncompress = " + std::string(compress), errors);
}

const CompressSettings* settings(const config::Config& c) {
  return c.routes[0].settings_for<CompressSettings>("compress");
}

TEST(CompressSettings, TrueTakesTheDefaults) {
  std::vector<std::string> errors;
  auto c = load("true", &errors);
  ASSERT_TRUE(c) << errors[0];
  const auto* s = settings(*c);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->encodings,
            (std::vector<Encoding>{Encoding::ZSTD, Encoding::BROTLI, Encoding::GZIP}));
  EXPECT_EQ(s->gzip_level, 6);
  EXPECT_EQ(s->min_length, 256);
  EXPECT_TRUE(s->compressible("text/html; charset=utf-8"));
  EXPECT_TRUE(s->compressible("Application/JSON"));
  EXPECT_TRUE(s->compressible("application/problem+json"));
  EXPECT_TRUE(s->compressible("image/svg+xml"));
  EXPECT_FALSE(s->compressible("image/png"));
  EXPECT_FALSE(s->compressible("application/octet-stream"));
  EXPECT_FALSE(s->compressible("font/woff2"));
  EXPECT_FALSE(s->compressible(""));
}

TEST(CompressSettings, FalseIsOff) {
  std::vector<std::string> errors;
  auto c = load("false", &errors);
  ASSERT_TRUE(c);
  EXPECT_EQ(settings(*c), nullptr);
}

TEST(CompressSettings, ATableChooses) {
  std::vector<std::string> errors;
  auto c = load(R"({ encodings = ["gzip", "br"], gzip_level = 9, brotli_quality = 5,)"
                R"( zstd_level = 7, min_length = 0, types = ["text/css", "application/*+xml"] })",
                &errors);
  ASSERT_TRUE(c) << errors[0];
  const auto* s = settings(*c);
  EXPECT_EQ(s->encodings, (std::vector<Encoding>{Encoding::GZIP, Encoding::BROTLI}));
  EXPECT_EQ(s->level(Encoding::GZIP), 9);
  EXPECT_EQ(s->level(Encoding::BROTLI), 5);
  EXPECT_EQ(s->level(Encoding::ZSTD), 7);
  EXPECT_EQ(s->min_length, 0);
  EXPECT_TRUE(s->compressible("text/css"));
  EXPECT_FALSE(s->compressible("text/html"));
  EXPECT_TRUE(s->compressible("application/atom+xml"));
}

TEST(CompressSettings, BadValuesAreErrorsWhereTheyAre) {
  struct Case {
    const char* value;
    const char* error;
  } cases[] = {
      {"\"yes\"", "c.toml:8:12: [[route]] compress: 'compress' must be true, false or a table"},
      {"{ encodings = [\"deflate\"] }",
       "c.toml:8:26: [[route]] compress: unknown encoding 'deflate' (zstd, br and gzip are known)"},
      {"{ gzip_level = 10 }",
       "c.toml:8:27: [[route]] compress: 'gzip_level' must be a number from 1 to 9"},
      {"{ types = [\"html\"] }", "c.toml:8:22: [[route]] compress: 'html' is not a media type "
                                 "(type/subtype, one '*' at most)"},
      {"{ level = 3 }", "c.toml:8:14: unknown key 'level' in [[route]] compress"},
  };
  for (const auto& k : cases) {
    std::vector<std::string> errors;
    EXPECT_FALSE(load(k.value, &errors)) << k.value;
    ASSERT_EQ(errors.size(), 1u) << k.value;
    EXPECT_EQ(errors[0], k.error);
  }
}

} // namespace
} // namespace portico::filters
