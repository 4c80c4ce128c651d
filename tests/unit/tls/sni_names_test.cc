// How a TLS listener matches SNI names against its certificates' patterns.
#include "tls/sni_names.h"

#include <gtest/gtest.h>

namespace portico::tls {
namespace {

TEST(SniNames, ExactOrOneLeftmostLabelCaseAside) {
  SniNames exact, wild;
  exact.add("example.com", 0);
  wild.add("*.example.com", 0);
  EXPECT_EQ(exact.find("Example.COM"), 0u);
  EXPECT_EQ(wild.find("www.example.com"), 0u);
  EXPECT_EQ(wild.find("a.b.example.com"), SniNames::kNone);
  EXPECT_EQ(wild.find("example.com"), SniNames::kNone);
}

TEST(SniNames, FirstEntryWins) {
  SniNames n;
  n.add("*.Example.com", 0);
  n.add("www.example.com", 1); // named exactly, but after a wildcard that takes it
  n.add("api.example.com", 1);
  n.add("other.test", 2);
  n.add("OTHER.test", 3); // the same name again: entry 2 keeps it
  EXPECT_EQ(n.find("www.example.com"), 0u);
  EXPECT_EQ(n.find("other.test"), 2u);
  EXPECT_EQ(n.find(".example.com"), SniNames::kNone); // no label before the dot
}

} // namespace
} // namespace portico::tls
