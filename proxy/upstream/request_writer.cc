#include "upstream/request_writer.h"

#include "upstream/request_fields.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
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
  // Two digits a byte, from a table: eight stores, not sixteen shifts and lookups.
  static constexpr auto kHexPairs = [] {
    std::array<char, 512> t{};
    constexpr char kHex[] = "0123456789abcdef";
    for (int b = 0; b < 256; ++b) {
      t[2 * b] = kHex[b >> 4];
      t[2 * b + 1] = kHex[b & 15];
    }
    return t;
  }();
  for (int i = 7; i >= 0; --i, z >>= 8)
    std::memcpy(buf + 2 * i, &kHexPairs[2 * (z & 0xff)], 2);
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

// Where a head's pieces go. Straight into the output's tail block, with one bounds check a
// piece, when it fits there (nearly always: a head is small, and a fresh block has 16 KiB):
// a head is some fifty pieces, and ByteQueue::append's own checks and counts were a third of
// writing one. Else through ByteQueue::append, across blocks.
struct SpanSink {
  char* p;
  char* end;
  bool overflow = false;
  void put(std::string_view s) {
    if (s.size() > static_cast<size_t>(end - p)) {
      overflow = true;
      p = end;
      return;
    }
    copy(s);
  }
  // "name: value\r\n" with one bounds check, not four.
  void put_field(std::string_view name, std::string_view value) {
    if (name.size() + value.size() + 4 > static_cast<size_t>(end - p)) {
      overflow = true;
      p = end;
      return;
    }
    copy(name);
    std::memcpy(p, ": ", 2);
    p += 2;
    copy(value);
    std::memcpy(p, "\r\n", 2);
    p += 2;
  }

private:
  // Most pieces are names and values of a few to a few dozen bytes: up to 16 are copied with
  // two loads and two stores that may overlap, inline, rather than by a call to memcpy.
  void copy(std::string_view s) {
    size_t n = s.size();
    const char* from = s.data();
    if (n >= 8 && n <= 16) {
      uint64_t a, b;
      std::memcpy(&a, from, 8);
      std::memcpy(&b, from + n - 8, 8);
      std::memcpy(p, &a, 8);
      std::memcpy(p + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
      uint32_t a, b;
      std::memcpy(&a, from, 4);
      std::memcpy(&b, from + n - 4, 4);
      std::memcpy(p, &a, 4);
      std::memcpy(p + n - 4, &b, 4);
    } else if (n > 16) {
      std::memcpy(p, from, n);
    } else if (n > 0) { // an empty view's data may be null: nothing may read it
      p[0] = from[0];
      p[n / 2] = from[n / 2];
      p[n - 1] = from[n - 1];
    }
    p += n;
  }
};

struct QueueSink {
  core::ByteQueue& out;
  void put(std::string_view s) { out.append(s); }
  void put_field(std::string_view name, std::string_view value) {
    out.append(name);
    out.append(": ");
    out.append(value);
    out.append("\r\n");
  }
};

// HTTP/1.1: the head as text.
template <typename Sink> struct Http1Fields {
  Sink& out;
  static constexpr bool kJoinCookies = true;
  static constexpr bool kTeTrailers = false; // TE is hop-by-hop on HTTP/1.1
  void field(std::string_view name, std::string_view value) { out.put_field(name, value); }
  void field_join(std::string_view name, std::initializer_list<std::string_view> parts) {
    out.put(name);
    out.put(": ");
    for (auto p : parts)
      out.put(p);
    out.put("\r\n");
  }
  void unique_field(std::string_view name, std::string_view value) { field(name, value); }
  void joined_cookies(const http::RequestHead& req) {
    out.put("cookie: ");
    bool first = true;
    for (const auto& c : req.headers)
      if (c.name == "cookie") {
        if (!first)
          out.put("; ");
        out.put(c.value);
        first = false;
      }
    out.put("\r\n");
  }
};

// RFC 6455 4.1: a nonce of 16 random bytes, base64 (24 characters), for the upstream's
// handshake when the client's (RFC 8441 over HTTP/2) carried none.
template <typename Sink> void put_websocket_key(Http1Fields<Sink>& fields) {
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
  fields.field("sec-websocket-key", {key, sizeof key});
}

template <typename Sink>
void write_head(Sink& out, const http::RequestHead& req, BodyFraming framing,
                const ClientOrigin& client, const ForwardingOptions& opts) {
  // An HTTP/2 extended CONNECT becomes the HTTP/1.1 handshake it stands for (RFC 8441 5).
  bool h2_websocket = framing == BodyFraming::TUNNEL && req.framed();
  out.put(h2_websocket ? std::string_view("GET") : req.method);
  out.put(" ");
  out.put(req.target);
  out.put(" HTTP/1.1\r\nhost: ");
  out.put(req.authority);
  out.put("\r\n");
  Http1Fields<Sink> fields{out};
  for_each_upstream_field(req, client, opts, fields);
  if (framing == BodyFraming::CONTENT_LENGTH) {
    char digits[24];
    auto r =
        std::to_chars(digits, digits + sizeof digits, static_cast<uint64_t>(req.content_length));
    fields.field("content-length", {digits, static_cast<size_t>(r.ptr - digits)});
  } else if (framing == BodyFraming::CHUNKED) {
    out.put("transfer-encoding: chunked\r\n");
  } else if (framing == BodyFraming::TUNNEL) {
    out.put("connection: upgrade\r\nupgrade: websocket\r\n");
    if (h2_websocket && !req.find("sec-websocket-key"))
      put_websocket_key(fields);
    if (h2_websocket && !req.find("sec-websocket-version"))
      out.put("sec-websocket-version: 13\r\n");
  }
  out.put("\r\n");
}

} // namespace

void write_upstream_request_head(core::ByteQueue& out, const http::RequestHead& req,
                                 BodyFraming framing, const ClientOrigin& client,
                                 const ForwardingOptions& opts) {
  std::span<char> space = out.write_space();
  SpanSink sink{space.data(), space.data() + space.size()};
  write_head(sink, req, framing, client, opts);
  if (!sink.overflow) {
    out.commit(static_cast<size_t>(sink.p - space.data()));
    return;
  }
  // Nothing was committed: the head again, across blocks (with a new request id, if it made
  // one: the first was never sent).
  QueueSink queue{out};
  write_head(queue, req, framing, client, opts);
}

} // namespace portico::upstream
