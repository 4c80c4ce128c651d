#include "portico/admin_guard.h"

#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

namespace portico::proxy {

bool changes_state(std::string_view path) {
  return path == "/cache/purge";
}

AdminPeer admin_peer(const sockaddr_storage& peer, bool over_control_socket) {
  if (over_control_socket)
    return AdminPeer::CONTROL_SOCKET;
  if (peer.ss_family == AF_UNIX)
    return AdminPeer::LOOPBACK; // the admin address's own socket: this host's processes
  if (peer.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(peer).sin_addr;
    return ntohl(a.s_addr) >> 24 == 127 ? AdminPeer::LOOPBACK : AdminPeer::OTHER;
  }
  if (peer.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127))
      return AdminPeer::LOOPBACK;
  }
  return AdminPeer::OTHER;
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  std::string_view v = http::trim_ows(authorization);
  if (v.size() <= kScheme.size() || !http::iequals(v.substr(0, kScheme.size()), kScheme) ||
      v[kScheme.size()] != ' ')
    return std::nullopt;
  v.remove_prefix(kScheme.size());
  while (!v.empty() && v.front() == ' ')
    v.remove_prefix(1);
  if (v.empty() || v.find_first_of(" \t") != std::string_view::npos)
    return std::nullopt;
  return v;
}

bool token_matches(std::string_view sha256, std::string_view presented) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), digest);
  return sha256.size() == sizeof digest && CRYPTO_memcmp(digest, sha256.data(), sizeof digest) == 0;
}

std::optional<metrics::AdminRefusal> admin_refusal(const config::AdminConfig& admin, AdminPeer peer,
                                                   const http::RequestHead& request) {
  using metrics::AdminRefusal;
  if (!changes_state(request.path()) || peer == AdminPeer::CONTROL_SOCKET)
    return std::nullopt;
  const config::AdminAccess& access = admin.access;
  if (!access.token_sha256.empty()) {
    std::optional<std::string_view> token;
    int fields = 0;
    for (const auto& h : request.headers)
      if (h.name == "authorization" && ++fields == 1)
        token = bearer_token(h.value);
    if (fields != 1 || !token)
      return AdminRefusal::MISSING_TOKEN;
    if (!token_matches(access.token_sha256, *token))
      return AdminRefusal::WRONG_TOKEN;
    return std::nullopt;
  }
  if (admin.control_socket.path.empty() && access.allow_loopback_control &&
      peer == AdminPeer::LOOPBACK)
    return std::nullopt;
  return AdminRefusal::UNTRUSTED_PEER;
}

std::string_view refusal_text(metrics::AdminRefusal r) {
  switch (r) {
  case metrics::AdminRefusal::MISSING_TOKEN:
    return "forbidden: this path changes state; send Authorization: Bearer with the token of "
           "[admin] token_file, or use [admin] control_socket\n";
  case metrics::AdminRefusal::WRONG_TOKEN:
    return "forbidden: the bearer token does not match [admin] token_file's\n";
  case metrics::AdminRefusal::UNTRUSTED_PEER:
    return "forbidden: this path changes state; it is taken over [admin] control_socket, with "
           "the bearer token of [admin] token_file, or from loopback when neither is "
           "configured and allow_loopback_control is true\n";
  }
  return "forbidden\n";
}

} // namespace portico::proxy
