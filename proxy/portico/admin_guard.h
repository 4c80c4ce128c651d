#pragma once
// Who may touch the admin endpoint's paths that change state. The read-only ones (/metrics,
// /healthz, /readyz, /status, the dashboard, /stats.json) answer whoever reaches the address,
// as probes and scrapes need. A path that changes state (/cache/purge) is served only to:
//  - a peer of the control socket ([admin] control_socket, whose file mode and owner say who
//    may connect);
//  - a request carrying "Authorization: Bearer TOKEN" with the token of [admin] token_file; once
//    one is configured, every other peer needs it, loopback too;
//  - with neither a token nor a control socket configured, a loopback peer (127.0.0.0/8, ::1,
//    or the admin address itself when it is a unix socket), unless allow_loopback_control is
//    false.
// Everything else is refused, 403 with the reason (metrics/admin_refusals.h counts them).
#include "config/config.h"
#include "http/request_head.h"
#include "metrics/admin_refusals.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <sys/socket.h>

namespace portico::proxy {

// The listener index the control socket's connections carry into the admin handler.
inline constexpr uint16_t kControlSocketListener = 1;

// Whether path is one that changes state, whatever the method (a GET of it is refused alike:
// the guard says nothing more of a path to one who may not use it).
bool changes_state(std::string_view path);

enum class AdminPeer {
  CONTROL_SOCKET, // came over [admin] control_socket
  LOOPBACK,       // 127.0.0.0/8, ::1 (or IPv4-mapped 127/8), or the admin address's unix socket
  OTHER,
};
// peer: the connection's peer address, as accepted.
AdminPeer admin_peer(const sockaddr_storage& peer, bool over_control_socket);

// The token of an Authorization value "Bearer TOKEN" (the scheme in any case, RFC 9110 11.1;
// one or more spaces after it, RFC 6750 2.1); nullopt for any other scheme, an empty token or
// one with spaces in it.
std::optional<std::string_view> bearer_token(std::string_view authorization);

// Whether presented is the token whose SHA-256 is sha256 (32 bytes). Both sides are digests
// of the same length when compared, by CRYPTO_memcmp: the time taken tells neither where they
// differ nor how long the configured token is.
bool token_matches(std::string_view sha256, std::string_view presented);

// Why request, from peer, may not be served under admin's settings; nullopt: it may. A
// request with more than one Authorization field carries no token.
std::optional<metrics::AdminRefusal> admin_refusal(const config::AdminConfig& admin, AdminPeer peer,
                                                   const http::RequestHead& request);

// The 403's body: why, and what would be let through.
std::string_view refusal_text(metrics::AdminRefusal r);

} // namespace portico::proxy
