#include "upstream/request_writer.h"

#include "http/http1_writer.h"

#include <charconv>
#include <cstdint>
#include <random>

namespace portico::upstream {

namespace {

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

bool named_in_connection(const http::RequestHead& req, std::string_view name) {
  for (const auto& h : req.headers)
    if (h.name == "connection" && http::list_contains(h.value, name))
      return true;
  return false;
}

} // namespace

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

void write_upstream_request_head(core::ByteQueue& out, const http::RequestHead& req,
                                 BodyFraming framing, std::string_view client_ip,
                                 const ForwardingOptions& opts) {
  out.append(req.method);
  out.append(" ");
  out.append(req.target);
  out.append(" HTTP/1.1\r\nhost: ");
  out.append(req.authority);
  out.append("\r\n");
  bool has_connection = req.find("connection") != nullptr;
  std::string_view xff, request_id;
  bool cookie_written = false;
  for (const auto& h : req.headers) {
    // Expect is answered by the proxy itself (100 Continue) before the body is read.
    if (is_hop_by_hop(h.name) || h.name == "host" || h.name == "content-length" ||
        h.name == "expect")
      continue;
    if (has_connection && named_in_connection(req, h.name))
      continue;
    if (h.name == "x-forwarded-for" && opts.add_forwarded) {
      xff = h.value; // re-emitted below with the client appended
      continue;
    }
    if (h.name == "x-forwarded-proto" && opts.add_forwarded)
      continue;
    if (h.name == opts.request_id_header)
      request_id = h.value;
    if (h.name == "cookie" && req.version == http::Version::HTTP_2) {
      // HTTP/2 may split Cookie into crumbs (RFC 9113 8.2.3); HTTP/1.1 wants one field.
      if (cookie_written)
        continue;
      cookie_written = true;
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
      continue;
    }
    http::append_field(out, h.name, h.value);
  }
  if (opts.add_forwarded) {
    out.append("x-forwarded-for: ");
    if (!xff.empty()) {
      out.append(xff);
      out.append(", ");
    }
    out.append(client_ip);
    out.append("\r\nx-forwarded-proto: ");
    out.append(req.scheme);
    out.append("\r\nforwarded: for=");
    bool v6 = client_ip.find(':') != std::string_view::npos;
    if (v6)
      out.append("\"[");
    out.append(client_ip);
    if (v6)
      out.append("]\"");
    out.append(";proto=");
    out.append(req.scheme);
    if (!req.authority.empty()) {
      out.append(";host=\"");
      out.append(req.authority);
      out.append("\"");
    }
    out.append("\r\n");
  }
  if (!opts.request_id_header.empty() && request_id.empty()) {
    char buf[16];
    http::append_field(out, opts.request_id_header, new_request_id(buf));
  }
  if (opts.add_via)
    out.append(req.version == http::Version::HTTP_2     ? "via: 2 portico\r\n"
               : req.version == http::Version::HTTP_1_0 ? "via: 1.0 portico\r\n"
                                                        : "via: 1.1 portico\r\n");
  if (framing == BodyFraming::CONTENT_LENGTH) {
    out.append("content-length: ");
    http::append_decimal(out, static_cast<uint64_t>(req.content_length));
    out.append("\r\n");
  } else if (framing == BodyFraming::CHUNKED) {
    out.append("transfer-encoding: chunked\r\n");
  }
  out.append("\r\n");
}

} // namespace portico::upstream
