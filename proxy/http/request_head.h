#pragma once
// The request line and header section of one exchange, protocol-neutral. Views point into the
// exchange's Arena (or the connection's read buffer) and live as long as the exchange.
#include "http/header.h"

#include <cstdint>
#include <vector>

namespace portico::http {

enum class Version : uint8_t { HTTP_1_0, HTTP_1_1, HTTP_2, HTTP_3 };

struct RequestHead {
  std::string_view method;
  std::string_view scheme;    // "http" or "https"
  std::string_view authority; // Host header or :authority
  std::string_view target;    // path and query, as sent
  std::string_view protocol;  // HTTP/2 extended CONNECT's :protocol (RFC 8441), else empty
  Version version = Version::HTTP_1_1;
  std::vector<Header> headers; // regular fields, names lower case, pseudo-headers excluded
  int64_t content_length = -1; // -1 when absent
  bool chunked = false;
  bool keep_alive = true; // HTTP/1 connection persistence after this exchange
  bool expect_continue = false;

  std::string_view path() const { return target.substr(0, target.find('?')); }
  std::string_view query() const {
    auto q = target.find('?');
    return q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
  }
  const Header* find(std::string_view lower_name) const {
    for (const auto& h : headers)
      if (h.name == lower_name)
        return &h;
    return nullptr;
  }
  bool has_body() const { return chunked || content_length > 0; }
  bool is_head() const { return method == "HEAD"; }
  // Each message framed by the protocol (HTTP/2, HTTP/3): a body ends with its stream, not
  // at a length the head states, and a head has no connection-specific fields.
  bool framed() const { return version >= Version::HTTP_2; }
  // A WebSocket opening handshake: an HTTP/1.1 GET asking to upgrade (RFC 6455 4.1), or an
  // HTTP/2 extended CONNECT for the websocket protocol (RFC 8441 4).
  bool is_websocket_upgrade() const;

  void clear() {
    method = scheme = authority = target = protocol = {};
    version = Version::HTTP_1_1;
    headers.clear(); // keeps capacity: no allocation on the next request
    content_length = -1;
    chunked = false;
    keep_alive = true;
    expect_continue = false;
  }
};

// The value of query parameter key in a query string ("a=1&id=7"), undecoded.
std::string_view query_param(std::string_view query, std::string_view key);
// An authority without its port: "example.com:8080" -> "example.com"; "[::1]:8080" -> "[::1]".
std::string_view host_of(std::string_view authority);

} // namespace portico::http
