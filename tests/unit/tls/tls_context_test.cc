// How a TLS listener matches SNI names against its certificates.
#include "tls/tls_context.h"

#include <gtest/gtest.h>

namespace portico::tls {
namespace {

TEST(TlsContext, SniNames) {
  EXPECT_TRUE(TlsContext::name_matches("example.com", "Example.COM"));
  EXPECT_TRUE(TlsContext::name_matches("*.example.com", "www.example.com"));
  EXPECT_FALSE(TlsContext::name_matches("*.example.com", "a.b.example.com"));
  EXPECT_FALSE(TlsContext::name_matches("*.example.com", "example.com"));
}

} // namespace
} // namespace portico::tls
