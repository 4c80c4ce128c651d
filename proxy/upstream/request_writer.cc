#include "upstream/request_writer.h"

#include "http/http1_writer.h"
#include "upstream/request_fields.h"

#include <charconv>
#include <cstdint>
#include <random>

namespace portico::upstream {

// 16 hex digits, unique enough per process: a random per-thread prefix and a counter.
std::string_view new_request_id(char* buf) {
  thread_local uint64_t state = [] {
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
  }();
  // splitmix64: cheap and well spread.
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, z >>= 4)
    buf[i] = kHex[z & 15];
  return {buf, 16};
}

bool named_in_connection(std::span<const http::Header> fields, std::string_view name) {
  for (const auto& h : fields)
    if (h.name == "connection" && http::list_contains(h.value, name))
      return true;
  return false;
}

bool is_hop_by_hop(std::string_view n) {
  return n == "connection" || n == "keep-alive" || n == "proxy-connection" ||
         n == "transfer-encoding" || n == "te" || n == "upgrade" || n == "http2-settings" ||
         n == "trailer";
}

BodyFraming body_framing(const http::RequestHead& req, bool body_follows) {
  if (req.content_length >= 0)
    return BodyFraming::CONTENT_LENGTH;
  if (req.chunked || body_follows)
    return BodyFraming::CHUNKED;
  return BodyFraming::NONE;
}

namespace {

// HTTP/1.1: the head as text, straight into the connection's output.
struct Http1Fields {
  core::ByteQueue& out;
  static constexpr bool kJoinCookies = true;
  static constexpr bool kTeTrailers = false; // TE is hop-by-hop on HTTP/1.1
  void field(std::string_view name, std::string_view value) {
    http::append_field(out, name, value);
  }
  void field_join(std::string_view name, std::initializer_list<std::string_view> parts) {
    out.append(name);
    out.append(": ");
    for (auto p : parts)
      if (!p.empty())
        out.append(p);
    out.append("\r\n");
  }
  void unique_field(std::string_view name, std::string_view value) {
    http::append_field(out, name, value);
  }
  void joined_cookies(const http::RequestHead& req) {
    out.append("cookie: ");
    bool first = true;
    for (const auto& c : req.headers)
      if (c.name == "cookie") {
        if (!first)
          out.append("; ");
        out.append(c.value);
        first = false;
      }
    out.append("\r\n");
  }
};

} // namespace

namespace {

// RFC 6455 4.1: a nonce of 16 random bytes, base64 (24 characters), for the upstream's
// handshake when the client's (RFC 8441 over HTTP/2) carried none.
void append_websocket_key(core::ByteQueue& out) {
  static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t a = rng(), b = rng();
  unsigned char bytes[18] = {};
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<unsigned char>(a >> (8 * i));
    bytes[8 + i] = static_cast<unsigned char>(b >> (8 * i));
  }
  char key[24];
  for (int i = 0, o = 0; i < 18; i += 3, o += 4) {
    uint32_t v = (uint32_t(bytes[i]) << 16) | (uint32_t(bytes[i + 1]) << 8) | bytes[i + 2];
    key[o] = kB64[(v >> 18) & 63];
    key[o + 1] = kB64[(v >> 12) & 63];
    key[o + 2] = kB64[(v >> 6) & 63];
    key[o + 3] = kB64[v & 63];
  }
  key[22] = key[23] = '='; // 16 bytes: two padding characters
  http::append_field(out, "sec-websocket-key", {key, sizeof key});
}

} // namespace

void write_upstream_request_head(core::ByteQueue& out, const http::RequestHead& req,
                                 BodyFraming framing, const ClientOrigin& client,
                                 const ForwardingOptions& opts) {
  // An HTTP/2 extended CONNECT becomes the HTTP/1.1 handshake it stands for (RFC 8441 5).
  bool h2_websocket = framing == BodyFraming::TUNNEL && req.framed();
  out.append(h2_websocket ? std::string_view("GET") : req.method);
  out.append(" ");
  out.append(req.target);
  out.append(" HTTP/1.1\r\nhost: ");
  out.append(req.authority);
  out.append("\r\n");
  Http1Fields fields{out};
  for_each_upstream_field(req, client, opts, fields);
  if (framing == BodyFraming::CONTENT_LENGTH) {
    out.append("content-length: ");
    http::append_decimal(out, static_cast<uint64_t>(req.content_length));
    out.append("\r\n");
  } else if (framing == BodyFraming::CHUNKED) {
    out.append("transfer-encoding: chunked\r\n");
  } else if (framing == BodyFraming::TUNNEL) {
    out.append("connection: upgrade\r\nupgrade: websocket\r\n");
    if (h2_websocket && !req.find("sec-websocket-key"))
      append_websocket_key(out);
    if (h2_websocket && !req.find("sec-websocket-version"))
      out.append("sec-websocket-version: 13\r\n");
  }
  out.append("\r\n");
}

} // namespace portico::upstream
