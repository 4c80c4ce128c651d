#pragma once
// Which of a client's request fields go upstream, and which the proxy adds, whatever the
// upstream protocol: Emitter writes them (HTTP/1.1 text, or HTTP/2 name-value pairs).
//   e.field(name, value): the value lives as long as the request;
//   e.field_join(name, {parts...}): a value made of parts that live only during the call;
//   e.unique_field(name, value): a value new with each request (kept out of HPACK's table),
//   living only during the call;
//   Emitter::kJoinCookies: HTTP/2 cookie crumbs become one field, e.joined_cookies(req).
// Host/:authority, Content-Length and the body's framing are the caller's.
#include "http/request_head.h"
#include "upstream/request_writer.h"

namespace portico::upstream {

// 16 random hex digits into buf.
std::string_view new_request_id(char* buf);
// Whether the request's Connection field lists name (so that field is hop-by-hop too).
bool named_in_connection(const http::RequestHead& req, std::string_view name);

template <typename Emitter>
void for_each_upstream_field(const http::RequestHead& req, std::string_view client_ip,
                             const ForwardingOptions& opts, Emitter& e) {
  bool has_connection = req.find("connection") != nullptr;
  std::string_view xff, request_id;
  [[maybe_unused]] bool cookie_written = false;
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
    if constexpr (Emitter::kJoinCookies) {
      // HTTP/2 may split Cookie into crumbs (RFC 9113 8.2.3); HTTP/1.1 wants one field.
      if (h.name == "cookie" && req.version == http::Version::HTTP_2) {
        if (!cookie_written)
          e.joined_cookies(req);
        cookie_written = true;
        continue;
      }
    }
    e.field(h.name, h.value);
  }
  if (opts.add_forwarded) {
    if (xff.empty())
      e.field("x-forwarded-for", client_ip);
    else
      e.field_join("x-forwarded-for", {xff, ", ", client_ip});
    e.field("x-forwarded-proto", req.scheme);
    bool v6 = client_ip.find(':') != std::string_view::npos;
    std::string_view host_open = req.authority.empty() ? "" : ";host=\"";
    std::string_view host_close = req.authority.empty() ? "" : "\"";
    e.field_join("forwarded", {"for=", v6 ? "\"[" : "", client_ip, v6 ? "]\"" : "",
                               ";proto=", req.scheme, host_open, req.authority, host_close});
  }
  if (!opts.request_id_header.empty() && request_id.empty()) {
    char buf[16];
    e.unique_field(opts.request_id_header, new_request_id(buf));
  }
  if (opts.add_via)
    e.field("via", req.version == http::Version::HTTP_2     ? "2 portico"
                   : req.version == http::Version::HTTP_1_0 ? "1.0 portico"
                                                            : "1.1 portico");
}

} // namespace portico::upstream
