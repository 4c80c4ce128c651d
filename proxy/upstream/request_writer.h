#pragma once
// Translation of a client's request into an HTTP/1.1 request to an upstream: hop-by-hop
// fields dropped, Host from :authority, HTTP/2 cookie crumbs joined, X-Forwarded-For,
// X-Forwarded-Proto, Forwarded and a request id added, and the body's framing chosen.
#include "core/byte_queue.h"
#include "core/cidr.h"
#include "http/request_head.h"

#include <span>

namespace portico::server {
class Exchange;
}

namespace portico::upstream {

struct ForwardingOptions {
  bool add_forwarded = true;
  std::span<const core::Cidr> trusted_proxies; // [server] trusted_proxies
  bool add_via = false;
  std::string_view request_id_header = "x-request-id";
};

// Who sent the request, as far as the proxy knows it itself (never from the request's own
// claims): the peer's address, whether the connection is TLS, and whether that peer is a
// trusted proxy whose forwarding fields are kept.
struct ClientOrigin {
  std::string_view address;
  bool tls = false;
  bool trusted = false;
  // Its connection's addresses, for a PROXY protocol header (send_proxy_protocol).
  const server::Exchange* exchange = nullptr;
};

// TUNNEL: a WebSocket opening handshake (an HTTP/1.1 Upgrade, or HTTP/2's extended CONNECT
// made one): the upgrade fields go up, and once the upstream answers 101 the body is raw bytes
// both ways.
enum class BodyFraming { NONE, CONTENT_LENGTH, CHUNKED, TUNNEL };

// How the request body travels upstream: as received when its length is known, chunked when
// it is not (an HTTP/1 chunked body, or HTTP/2 DATA without content-length).
BodyFraming body_framing(const http::RequestHead& req, bool body_follows);

void write_upstream_request_head(core::ByteQueue& out, const http::RequestHead& req,
                                 BodyFraming framing, const ClientOrigin& client,
                                 const ForwardingOptions& opts);

// Hop-by-hop fields (RFC 9110 7.6.1) never forwarded in either direction.
bool is_hop_by_hop(std::string_view lower_name);

} // namespace portico::upstream
