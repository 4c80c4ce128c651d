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
// Whether a Connection field among fields lists name (so that field is hop-by-hop too), in a
// request or a response.
bool named_in_connection(std::span<const http::Header> fields, std::string_view name);

template <typename Emitter>
void for_each_upstream_field(const http::RequestHead& req, const ClientOrigin& client,
                             const ForwardingOptions& opts, Emitter& e) {
  bool has_connection = req.find("connection") != nullptr;
  // The forwarding fields a trusted proxy sent; from anyone else they are dropped, since a
  // client could claim any address or https.
  std::string_view xff, xfp, forwarded, request_id;
  [[maybe_unused]] bool cookie_written = false;
  bool te_trailers = false;
  for (const auto& h : req.headers) {
    // "TE: trailers" says the client takes trailer fields, which a gRPC server requires to
    // hear; it is the one TE that HTTP/2 allows (RFC 9113 8.2.2), and it stays true through
    // this proxy, which passes trailers on: said again to an HTTP/2 upstream. Any other TE,
    // and any TE on HTTP/1.1, is this hop's.
    if (h.name == "te") {
      te_trailers |= http::list_contains(h.value, "trailers");
      continue;
    }
    // Expect is answered by the proxy itself (100 Continue) before the body is read.
    if (is_hop_by_hop(h.name) || h.name == "host" || h.name == "content-length" ||
        h.name == "expect")
      continue;
    if (has_connection && named_in_connection(req.headers, h.name))
      continue;
    if (opts.add_forwarded) {
      std::string_view* kept = h.name == "x-forwarded-for"     ? &xff
                               : h.name == "x-forwarded-proto" ? &xfp
                               : h.name == "forwarded"         ? &forwarded
                                                               : nullptr;
      if (kept) {
        if (client.trusted)
          *kept = h.value; // re-emitted below, with this hop appended
        continue;
      }
    }
    if (h.name == opts.request_id_header)
      request_id = h.value;
    if constexpr (Emitter::kJoinCookies) {
      // HTTP/2 may split Cookie into crumbs (RFC 9113 8.2.3); HTTP/1.1 wants one field.
      if (h.name == "cookie" && req.framed()) {
        if (!cookie_written)
          e.joined_cookies(req);
        cookie_written = true;
        continue;
      }
    }
    e.field(h.name, h.value);
  }
  if (Emitter::kTeTrailers && te_trailers)
    e.field("te", "trailers");
  if (opts.add_forwarded) {
    // string_view literals: a ?: of two C strings would be measured with strlen per request.
    using namespace std::string_view_literals;
    // The scheme is the connection's, not the request's: a cleartext request that says
    // https (absolute form, :scheme) was still cleartext.
    std::string_view proto = client.tls ? "https"sv : "http"sv;
    std::string_view ip = client.address;
    if (xff.empty())
      e.field("x-forwarded-for", ip);
    else
      e.field_join("x-forwarded-for", {xff, ", ", ip});
    // A trusted proxy in front knows the original scheme; this hop's is the one it used.
    e.field("x-forwarded-proto", xfp.empty() ? proto : xfp);
    bool v6 = ip.find(':') != std::string_view::npos;
    std::string_view host_open = req.authority.empty() ? ""sv : ";host=\""sv;
    std::string_view host_close = req.authority.empty() ? ""sv : "\""sv;
    e.field_join("forwarded",
                 {forwarded, forwarded.empty() ? ""sv : ", "sv, "for=", v6 ? "\"["sv : ""sv, ip,
                  v6 ? "]\""sv : ""sv, ";proto=", proto, host_open, req.authority, host_close});
  }
  if (!opts.request_id_header.empty() && request_id.empty()) {
    char buf[16];
    e.unique_field(opts.request_id_header, new_request_id(buf));
  }
  if (opts.add_via)
    e.field("via", req.version == http::Version::HTTP_3     ? "3 portico"
                   : req.version == http::Version::HTTP_2   ? "2 portico"
                   : req.version == http::Version::HTTP_1_0 ? "1.0 portico"
                                                            : "1.1 portico");
}

} // namespace portico::upstream
