// The common response read without llhttp: part of Http1ResponseParser. Profiled on h2c -> h1,
// llhttp's byte-at-a-time state machine was a quarter of the proxy's instructions per request,
// re-reading a head the strict scanner had just checked line by line. When a final response's
// whole head arrives in one buffer, the scanner has accepted it, and it is of the plain kind
// (HTTP/1.1 or 1.0, a status of 200 or more but not 101, framed by one Content-Length of digits
// or by its status alone, Connection "close" or "keep-alive" if any, no Transfer-Encoding,
// Upgrade or Proxy-Connection), the head is split here and the body counted here. Anything else
// is declined before any state changes, and llhttp reads the response as before. Both readings
// must agree on everything they report: http1_response_parser_fuzz compares a whole reading
// (this path) with one in small pieces (llhttp's) on every input, and the unit tests do the same.
#include "http/http1_response_parser.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace portico::http {

namespace {

bool has_upper(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

} // namespace

long Http1ResponseParser::fast_head(const char* data, size_t len, size_t head_len) {
  // "HTTP/1.d SSS": the scanner has checked the shape; llhttp reads other versions its own way.
  if (head_len < 16 || std::memcmp(data, "HTTP/1.", 7) != 0 || (data[7] != '1' && data[7] != '0'))
    return -1;
  int status = (data[9] - '0') * 100 + (data[10] - '0') * 10 + (data[11] - '0');
  if (status < 200 || status == 101)
    return -1;
  const Http1StrictScanner::Mark* marks = scanner_.marks();
  if (!marks)
    return -1;
  size_t from =
      static_cast<size_t>(static_cast<const char*>(std::memchr(data, '\r', head_len)) - data) + 2;
  auto& h = head_;
  h.clear();
  h.status = status;
  h.minor_version = data[7] - '0';
  int cl_fields = 0;
  int64_t length = -1;
  int connection = 0; // 0 none, 1 close, 2 keep-alive
  for (const auto* k = marks; k < marks + scanner_.mark_count(); ++k) {
    // The scanner's marks: each field line runs from the end of the last one to its CR, and
    // has its colon where marked.
    std::string_view name(data + from, k->colon - from);
    // As llhttp reads it: without its leading whitespace. The framing fields are judged on
    // that (trailing whitespace in them is llhttp's to judge); every value is passed on
    // without its trailing whitespace as well.
    std::string_view raw = trim_ows_front({data + k->colon + 1, k->cr - k->colon - 1});
    std::string_view value = trim_ows_back(raw);
    from = k->cr + 2;
    if (has_upper(name)) {
      char* lowered = arena_.allocate(name.size());
      for (size_t i = 0; i < name.size(); ++i)
        lowered[i] = ascii_lower(name[i]);
      name = {lowered, name.size()};
    }
    if (name == "content-length") {
      // Digits only, few enough not to overflow; llhttp judges anything else.
      if (++cl_fields > 1 || raw.empty() || raw.size() > 18 ||
          !std::all_of(raw.begin(), raw.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return -1;
      std::from_chars(value.data(), value.data() + value.size(), length);
    } else if (name == "connection") {
      if (connection != 0)
        return -1;
      connection = iequals(raw, "close") ? 1 : iequals(raw, "keep-alive") ? 2 : -1;
      if (connection < 0)
        return -1;
    } else if (name == "transfer-encoding" || name == "upgrade" || name == "proxy-connection") {
      return -1;
    } else if (name == "keep-alive") {
      h.keepalive_timeout = parse_keepalive_timeout(value);
    }
    h.headers.push_back({name, value});
  }
  bool no_body = head_request_ || status == 204 || status == 304;
  if (length < 0 && !no_body)
    return -1; // read to the connection's end: llhttp's finish() knows how
  bool persists = h.minor_version == 1 ? connection != 1 : connection == 2;
  h.content_length = length;
  if (no_body) {
    h.body_announced = length > 0;
    h.keep_alive = persists && !(status == 204 && h.body_announced);
  } else {
    h.keep_alive = persists;
  }
  // Declined from here on is not possible: the response is this path's.
  scanner_.stop();
  in_trailers_ = true;
  sink_.on_response_head(h);
  h.headers.clear();
  if (no_body || length == 0) {
    done_ = true;
    sink_.on_response_end();
    return static_cast<long>(head_len);
  }
  fast_left_ = length;
  return static_cast<long>(head_len + fast_body(data + head_len, len - head_len));
}

size_t Http1ResponseParser::fast_body(const char* data, size_t len) {
  size_t n = static_cast<size_t>(std::min<int64_t>(fast_left_, static_cast<int64_t>(len)));
  if (n > 0) {
    fast_left_ -= static_cast<int64_t>(n);
    sink_.on_response_body({data, n});
  }
  if (fast_left_ == 0) {
    fast_left_ = -1;
    done_ = true;
    sink_.on_response_end();
  }
  return n;
}

} // namespace portico::http
