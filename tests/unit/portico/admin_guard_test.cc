// Who may touch the admin endpoint's state-changing paths (portico/admin_guard.h): the path
// classification, the peer classification, the bearer parser, the token comparison and the
// decision over every combination of token, control socket and loopback setting.
#include "portico/admin_guard.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/sha.h>
#include <sys/un.h>

namespace portico::proxy {
namespace {

using metrics::AdminRefusal;

std::string sha256(std::string_view s) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d);
  return std::string(reinterpret_cast<const char*>(d), sizeof d);
}

sockaddr_storage v4(const char* ip) {
  sockaddr_storage ss{};
  auto& a = reinterpret_cast<sockaddr_in&>(ss);
  a.sin_family = AF_INET;
  EXPECT_EQ(::inet_pton(AF_INET, ip, &a.sin_addr), 1) << ip;
  return ss;
}

sockaddr_storage v6(const char* ip) {
  sockaddr_storage ss{};
  auto& a = reinterpret_cast<sockaddr_in6&>(ss);
  a.sin6_family = AF_INET6;
  EXPECT_EQ(::inet_pton(AF_INET6, ip, &a.sin6_addr), 1) << ip;
  return ss;
}

TEST(AdminGuardPaths, OnlyThePurgeChangesState) {
  EXPECT_TRUE(changes_state("/cache/purge"));
  for (auto p : {"/", "/dashboard", "/metrics", "/healthz", "/readyz", "/status", "/stats.json",
                 "/cache/purge/", "/cache", "/nowhere", ""})
    EXPECT_FALSE(changes_state(p)) << p;
}

TEST(AdminGuardPeers, LoopbackIsTheWholeOf127AndOneAndTheUnixAddress) {
  for (auto ip : {"127.0.0.1", "127.0.0.2", "127.255.255.254"})
    EXPECT_EQ(admin_peer(v4(ip), false), AdminPeer::LOOPBACK) << ip;
  for (auto ip : {"::1", "::ffff:127.0.0.1"})
    EXPECT_EQ(admin_peer(v6(ip), false), AdminPeer::LOOPBACK) << ip;
  for (auto ip : {"10.0.0.1", "192.0.2.7", "0.0.0.0", "128.0.0.1", "126.255.255.255"})
    EXPECT_EQ(admin_peer(v4(ip), false), AdminPeer::OTHER) << ip;
  for (auto ip : {"2001:db8::1", "::ffff:10.0.0.1", "::", "fe80::1", "::2"})
    EXPECT_EQ(admin_peer(v6(ip), false), AdminPeer::OTHER) << ip;
  sockaddr_storage unix_peer{};
  unix_peer.ss_family = AF_UNIX;
  EXPECT_EQ(admin_peer(unix_peer, false), AdminPeer::LOOPBACK);
  sockaddr_storage unknown{};
  unknown.ss_family = AF_UNSPEC;
  EXPECT_EQ(admin_peer(unknown, false), AdminPeer::OTHER);
  EXPECT_EQ(admin_peer(v4("192.0.2.7"), true), AdminPeer::CONTROL_SOCKET);
}

TEST(AdminGuardBearer, TheSchemeInAnyCaseThenOneWord) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("bearer abc"), "abc");
  EXPECT_EQ(bearer_token("BEARER   abc "), "abc");
  EXPECT_EQ(bearer_token("Bearer a.b-c_d~e+f/g=="), "a.b-c_d~e+f/g==");
  for (auto v : {"", "Bearer", "Bearer ", "Bearer    ", "Bearerabc", "abc", "Basic abc",
                 "Token abc", "Bearer a b", "Bearer\tabc", "Bear abc"})
    EXPECT_EQ(bearer_token(v), std::nullopt) << '"' << v << '"';
}

TEST(AdminGuardToken, MatchesOnlyTheSameBytes) {
  std::string digest = sha256("s3cret-token-0123456789");
  EXPECT_TRUE(token_matches(digest, "s3cret-token-0123456789"));
  EXPECT_FALSE(token_matches(digest, "s3cret-token-0123456788")); // same length
  EXPECT_FALSE(token_matches(digest, "t3cret-token-0123456789"));
  EXPECT_FALSE(token_matches(digest, "s3cret-token-012345678"));
  EXPECT_FALSE(token_matches(digest, "s3cret-token-01234567890"));
  EXPECT_FALSE(token_matches(digest, ""));
  // A digest that is not one (no token configured) matches nothing, the empty token included.
  EXPECT_FALSE(token_matches("", ""));
  EXPECT_FALSE(token_matches(digest.substr(0, 31), "s3cret-token-0123456789"));
}

struct Request {
  http::RequestHead head;
  explicit Request(std::string_view target, std::vector<std::string_view> authorizations = {}) {
    head.method = "POST";
    head.target = target;
    for (auto a : authorizations)
      head.headers.push_back({"authorization", a});
  }
};

config::AdminConfig admin(bool token, bool control_socket, bool loopback = true) {
  config::AdminConfig a;
  if (token) {
    a.access.token_file = "/etc/portico/admin.token";
    a.access.token_sha256 = sha256("right");
  }
  if (control_socket)
    a.control_socket.path = "/run/portico/control.sock";
  a.access.allow_loopback_control = loopback;
  return a;
}

TEST(AdminGuardDecision, ReadOnlyPathsAreNeverRefused) {
  for (auto peer : {AdminPeer::OTHER, AdminPeer::LOOPBACK})
    for (bool token : {false, true})
      for (bool socket : {false, true})
        for (auto p : {"/metrics", "/healthz", "/", "/status?x=1"})
          EXPECT_EQ(admin_refusal(admin(token, socket, false), peer, Request(p).head), std::nullopt)
              << p;
}

TEST(AdminGuardDecision, TheControlSocketNeedsNothing) {
  for (bool token : {false, true})
    EXPECT_EQ(admin_refusal(admin(token, true), AdminPeer::CONTROL_SOCKET,
                            Request("/cache/purge?url=x").head),
              std::nullopt);
}

TEST(AdminGuardDecision, WithNeitherLoopbackMayUnlessTurnedOff) {
  Request r("/cache/purge?url=x");
  EXPECT_EQ(admin_refusal(admin(false, false), AdminPeer::LOOPBACK, r.head), std::nullopt);
  EXPECT_EQ(admin_refusal(admin(false, false), AdminPeer::OTHER, r.head),
            AdminRefusal::UNTRUSTED_PEER);
  EXPECT_EQ(admin_refusal(admin(false, false, false), AdminPeer::LOOPBACK, r.head),
            AdminRefusal::UNTRUSTED_PEER);
  // A bearer token means nothing where none is configured.
  EXPECT_EQ(admin_refusal(admin(false, false), AdminPeer::OTHER,
                          Request("/cache/purge", {"Bearer right"}).head),
            AdminRefusal::UNTRUSTED_PEER);
}

TEST(AdminGuardDecision, AControlSocketEndsTheLoopbackException) {
  EXPECT_EQ(admin_refusal(admin(false, true), AdminPeer::LOOPBACK, Request("/cache/purge").head),
            AdminRefusal::UNTRUSTED_PEER);
}

TEST(AdminGuardDecision, ATokenIsNeededFromEveryPeerOnceConfigured) {
  for (auto peer : {AdminPeer::LOOPBACK, AdminPeer::OTHER}) {
    EXPECT_EQ(admin_refusal(admin(true, false), peer, Request("/cache/purge").head),
              AdminRefusal::MISSING_TOKEN);
    EXPECT_EQ(admin_refusal(admin(true, false), peer, Request("/cache/purge", {"right"}).head),
              AdminRefusal::MISSING_TOKEN);
    EXPECT_EQ(
        admin_refusal(admin(true, false), peer, Request("/cache/purge", {"Bearer wrong"}).head),
        AdminRefusal::WRONG_TOKEN);
    EXPECT_EQ(
        admin_refusal(admin(true, false), peer, Request("/cache/purge", {"Bearer rightt"}).head),
        AdminRefusal::WRONG_TOKEN);
    EXPECT_EQ(
        admin_refusal(admin(true, true), peer, Request("/cache/purge", {"Bearer right"}).head),
        std::nullopt);
    // Two Authorization fields are no token, even when one is right.
    EXPECT_EQ(admin_refusal(admin(true, false), peer,
                            Request("/cache/purge", {"Bearer right", "Bearer right"}).head),
              AdminRefusal::MISSING_TOKEN);
  }
}

TEST(AdminGuardDecision, EachRefusalSaysWhy) {
  EXPECT_NE(refusal_text(AdminRefusal::MISSING_TOKEN).find("Authorization: Bearer"),
            std::string_view::npos);
  EXPECT_NE(refusal_text(AdminRefusal::WRONG_TOKEN).find("does not match"), std::string_view::npos);
  EXPECT_NE(refusal_text(AdminRefusal::UNTRUSTED_PEER).find("control_socket"),
            std::string_view::npos);
}

} // namespace
} // namespace portico::proxy
