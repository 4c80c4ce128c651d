// Accept-Encoding negotiation (RFC 9110 12.5.3): weights, the wildcard, identity, the route's
// order for ties, and what is not a weight.
#include "compression/accept_encoding.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace portico::compression {
namespace {

constexpr Encoding kAll[] = {Encoding::ZSTD, Encoding::BROTLI, Encoding::GZIP};

std::string pick(std::vector<std::string> values, std::span<const Encoding> offered = kAll) {
  std::vector<http::Header> fields{{"host", "x"}};
  for (const auto& v : values)
    fields.push_back({"accept-encoding", v});
  auto e = negotiate(fields, offered);
  return e ? std::string(token(*e)) : "identity";
}

TEST(AcceptEncoding, NoFieldNoCoding) {
  EXPECT_EQ(pick({}), "identity");
  EXPECT_EQ(pick({""}), "identity");
}

TEST(AcceptEncoding, TheRoutesOrderBreaksTies) {
  EXPECT_EQ(pick({"gzip, deflate, br, zstd"}), "zstd");
  EXPECT_EQ(pick({"gzip, deflate, br"}), "br");
  EXPECT_EQ(pick({"gzip"}), "gzip");
  constexpr Encoding gzip_first[] = {Encoding::GZIP, Encoding::BROTLI};
  EXPECT_EQ(pick({"br, gzip, zstd"}, gzip_first), "gzip");
  EXPECT_EQ(pick({"zstd"}, gzip_first), "identity"); // not offered on this route
}

TEST(AcceptEncoding, WeightsDecide) {
  EXPECT_EQ(pick({"gzip;q=0.5, br;q=0.8"}), "br");
  EXPECT_EQ(pick({"gzip;q=1.0, br;q=0.999"}), "gzip");
  EXPECT_EQ(pick({"gzip ; q=0.9 , zstd;Q=0.95"}), "zstd");
  EXPECT_EQ(pick({"gzip;q=0.5", "br;q=0.7"}), "br"); // two fields are one list
  EXPECT_EQ(pick({"GZIP"}), "gzip");
  EXPECT_EQ(pick({"x-gzip"}), "gzip");
}

TEST(AcceptEncoding, ZeroRefuses) {
  EXPECT_EQ(pick({"gzip;q=0"}), "identity");
  EXPECT_EQ(pick({"br;q=0, gzip"}), "gzip");
  EXPECT_EQ(pick({"*;q=0"}), "identity");
  EXPECT_EQ(pick({"*, zstd;q=0, br;q=0"}), "gzip");
  EXPECT_EQ(pick({"gzip;q=0.000"}), "identity");
}

TEST(AcceptEncoding, TheWildcardStandsForWhatIsNotNamed) {
  EXPECT_EQ(pick({"*"}), "zstd");
  EXPECT_EQ(pick({"*;q=0.1, gzip;q=0.5"}), "gzip");
  EXPECT_EQ(pick({"deflate, *;q=0.2"}), "zstd");
}

TEST(AcceptEncoding, IdentityWeighedAboveEveryCodingWins) {
  EXPECT_EQ(pick({"identity, gzip;q=0.5"}), "identity");
  EXPECT_EQ(pick({"identity;q=0.5, gzip"}), "gzip");
  EXPECT_EQ(pick({"identity;q=0, gzip"}), "gzip");
}

TEST(AcceptEncoding, WhatIsNoWeightRefusesItsCoding) {
  for (std::string q :
       {"2", "1.5", "-1", "0.0001", "1e3", "abc", "", " ", "0.5x", "1.001", "99999999999999999999"})
    EXPECT_EQ(pick({"gzip;q=" + q}), "identity") << q;
  EXPECT_EQ(pick({"gzip;q=7, br"}), "br");
}

TEST(AcceptEncoding, Qvalues) {
  EXPECT_EQ(parse_qvalue("1"), 1000);
  EXPECT_EQ(parse_qvalue("1."), 1000);
  EXPECT_EQ(parse_qvalue("1.000"), 1000);
  EXPECT_EQ(parse_qvalue("0"), 0);
  EXPECT_EQ(parse_qvalue("0.5"), 500);
  EXPECT_EQ(parse_qvalue("0.05"), 50);
  EXPECT_EQ(parse_qvalue("0.123"), 123);
  EXPECT_EQ(parse_qvalue("0.1234"), -1);
  EXPECT_EQ(parse_qvalue("1.01"), -1);
  EXPECT_EQ(parse_qvalue(".5"), -1);
}

TEST(AcceptEncoding, ThousandsOfTokensAndJunk) {
  std::string many;
  for (int i = 0; i < 5000; ++i)
    many += "x-coding-" + std::to_string(i) + ";q=0." + std::to_string(i % 10) + ", ";
  EXPECT_EQ(pick({many}), "identity");
  EXPECT_EQ(pick({many + "br;q=0.3"}), "br");
  EXPECT_EQ(pick({",,, ;;; ,gzip;;q=0.5;;,"}), "gzip");
  EXPECT_EQ(pick({"gzip;q"}), "gzip"); // a parameter that is not q changes nothing
  EXPECT_EQ(pick({std::string(100000, ',')}), "identity");
}

} // namespace
} // namespace portico::compression
