#include "http/h2_request_rules.h"

#include "http/field_value.h"
#include "http/header.h"

#include <array>
#include <nghttp2/nghttp2.h>

namespace portico::http {

namespace {

// The library's byte classes, tabulated once from its own checks (each judges a string byte by
// byte: nghttp2_check_header_name for a regular name, _authority for :authority and Host,
// _method, _path), so a verdict here is the library's, found in a table lookup per byte instead
// of a call per field. Values are the one class the HTTP/1 scanner shares
// (http/field_value.h); the unit test holds it to nghttp2_check_header_value's.
using ByteClass = std::array<bool, 256>;
template <int (*check)(const uint8_t*, size_t)> ByteClass tabulate() {
  ByteClass t{};
  for (int c = 0; c < 256; ++c) {
    auto b = static_cast<uint8_t>(c);
    t[b] = check(&b, 1) != 0;
  }
  return t;
}
const ByteClass kName = tabulate<nghttp2_check_header_name>();
const ByteClass kAuthority = tabulate<nghttp2_check_authority>();
const ByteClass kMethod = tabulate<nghttp2_check_method>();
const ByteClass kPath = tabulate<nghttp2_check_path>();

bool all_in(const ByteClass& t, std::string_view s) {
  for (unsigned char c : s)
    if (!t[c])
      return false;
  return true;
}

} // namespace

// RFC 9113 8.2.1, as nghttp2_check_header_value_rfc9113: no whitespace at either end, and no
// CTL but HTAB, nor DEL.
bool field_value_ok(std::string_view v) {
  if (v.empty())
    return true;
  if (v.front() == ' ' || v.front() == '\t' || v.back() == ' ' || v.back() == '\t')
    return false;
  auto* p = reinterpret_cast<const unsigned char*>(v.data());
  return skip_field_value(p, p + v.size()) == p + v.size();
}

bool field_name_ok(std::string_view n) {
  return !n.empty() && all_in(kName, n);
}

namespace {

// RFC 3986 3.1: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
bool scheme_ok(std::string_view v) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (v.empty() || !alpha(v[0]))
    return false;
  for (char c : v.substr(1))
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.')
      return false;
  return true;
}

// Digits only, at least one, no overflow; else -1.
int64_t parse_length(std::string_view v) {
  if (v.empty())
    return -1;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9' || n > (INT64_MAX - (c - '0')) / 10)
      return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

} // namespace

bool H2RequestRules::once(Flag flag, std::string_view value) {
  if ((flags_ & flag) || value.empty())
    return false;
  flags_ |= flag;
  return true;
}

bool H2RequestRules::field(std::string_view n, std::string_view v, bool trailer,
                           bool connect_protocol) {
  if (n.empty())
    return false;
  if (n[0] == ':') {
    // Pseudo-fields only at the head of the header section, each once and not empty, and only
    // the request's five (RFC 9113 8.3): any other is refused, in any case, as nghttp2 does.
    if (trailer || (flags_ & REGULAR_SEEN))
      return false;
    if (n == ":method") {
      if (!(!v.empty() && all_in(kMethod, v)) || !once(METHOD, v))
        return false;
      if (v == "CONNECT")
        flags_ |= METH_CONNECT;
      else if (v == "OPTIONS")
        flags_ |= METH_OPTIONS;
      return true;
    }
    if (n == ":path") {
      if (!all_in(kPath, v) || !once(PATH, v))
        return false;
      if (v[0] == '/')
        flags_ |= PATH_REGULAR;
      else if (v == "*")
        flags_ |= PATH_ASTERISK;
      return true;
    }
    if (n == ":scheme") {
      if (!once(SCHEME, v))
        return false;
      if (v == "https" || v == "http") {
        flags_ |= SCHEME_HTTP;
        return true;
      }
      if (!scheme_ok(v))
        return false;
      if (iequals(v, "http") || iequals(v, "https"))
        flags_ |= SCHEME_HTTP;
      return true;
    }
    if (n == ":authority")
      return all_in(kAuthority, v) && once(AUTHORITY, v);
    if (n == ":protocol")
      return connect_protocol && field_value_ok(v) && once(PROTOCOL, v);
    return false;
  }
  if (!field_name_ok(n))
    return false; // upper case, or not a token
  flags_ |= REGULAR_SEEN;
  // The fields RFC 9113 8.2.2 forbids (connection-specific), and the ones said once.
  switch (n.size()) {
  case 2:
    if (n == "te") // only "trailers" (8.2.2)
      return field_value_ok(v) && iequals(v, "trailers");
    break;
  case 4:
    if (n == "host")
      return all_in(kAuthority, v) && once(HOST, v);
    break;
  case 7:
    if (n == "upgrade")
      return false;
    break;
  case 10:
    if (n == "connection" || n == "keep-alive")
      return false;
    break;
  case 14:
    if (n == "content-length") {
      if (!field_value_ok(v) || content_length_ != -1)
        return false;
      content_length_ = parse_length(v);
      return content_length_ != -1;
    }
    break;
  case 16:
    if (n == "proxy-connection")
      return false;
    break;
  case 17:
    if (n == "transfer-encoding")
      return false;
    break;
  default: break;
  }
  return field_value_ok(v);
}

bool H2RequestRules::header_end() {
  // CONNECT (RFC 9113 8.5): :authority and nothing of a URI's path; its content is a tunnel's,
  // so a content-length counts for nothing.
  if ((flags_ & METH_CONNECT) && !(flags_ & PROTOCOL)) {
    if ((flags_ & (SCHEME | PATH)) || !(flags_ & AUTHORITY))
      return false;
    content_length_ = -1;
    return true;
  }
  constexpr uint16_t kRequired = METHOD | PATH | SCHEME;
  if ((flags_ & kRequired) != kRequired || !(flags_ & (AUTHORITY | HOST)))
    return false;
  // Extended CONNECT (RFC 8441 4): the method is CONNECT, with an :authority.
  if ((flags_ & PROTOCOL) && (!(flags_ & METH_CONNECT) || !(flags_ & AUTHORITY)))
    return false;
  // An http(s) URI's path starts with "/", or is "*" for OPTIONS (RFC 9113 8.3.1).
  if ((flags_ & SCHEME_HTTP) && !(flags_ & PATH_REGULAR) &&
      !((flags_ & METH_OPTIONS) && (flags_ & PATH_ASTERISK)))
    return false;
  return true;
}

} // namespace portico::http
