#include "cache/vary.h"

#include <gtest/gtest.h>
#include <vector>

namespace portico::cache {
namespace {

std::string key(std::vector<std::string> names, std::vector<http::Header> fields) {
  std::string out;
  vary_key(names, fields, out);
  return out;
}

TEST(Vary, NamesAreLowerCaseOnceAndSorted) {
  std::vector<std::string> names;
  ASSERT_TRUE(vary_names(
      std::vector<http::Header>{{"vary", "X-B, Accept-Language"}, {"vary", "x-b"}}, names));
  EXPECT_EQ(names, (std::vector<std::string>{"accept-language", "x-b"}));
}

TEST(Vary, StarOrTooManyNamesMatchNoRequest) {
  std::vector<std::string> names;
  EXPECT_FALSE(vary_names(std::vector<http::Header>{{"vary", "Foo, *"}}, names));
  std::vector<http::Header> many;
  std::vector<std::string> storage;
  for (size_t i = 0; i <= kMaxVaryNames; ++i)
    storage.push_back("x-" + std::to_string(i));
  for (const auto& s : storage)
    many.push_back({"vary", s});
  EXPECT_FALSE(vary_names(many, names));
}

TEST(Vary, AbsentIsNotEmptyAndLinesJoin) {
  EXPECT_NE(key({"foo"}, {}), key({"foo"}, {{"foo", ""}}));
  EXPECT_EQ(key({"foo"}, {{"foo", "1"}, {"foo", "2"}}), key({"foo"}, {{"foo", "1, 2"}}));
  EXPECT_EQ(key({"foo"}, {{"foo", "1 ,  2"}}), key({"foo"}, {{"foo", "1,2"}}));
  EXPECT_NE(key({"foo"}, {{"foo", "1,2"}}), key({"foo"}, {{"foo", "2,1"}}));
}

TEST(Vary, NegotiationFieldsIgnoreOrderCaseAndSpaces) {
  EXPECT_EQ(key({"accept-language"}, {{"accept-language", "en, de;q=0.5"}}),
            key({"accept-language"}, {{"accept-language", "DE; q=0.5,EN"}}));
  EXPECT_NE(key({"accept-language"}, {{"accept-language", "en"}}),
            key({"accept-language"}, {{"accept-language", "de"}}));
}

} // namespace
} // namespace portico::cache
