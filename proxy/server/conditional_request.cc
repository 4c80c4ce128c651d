#include "server/conditional_request.h"

#include "http/header.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace portico::server {

// True when an If-None-Match list names etag, by weak comparison (RFC 9110 8.8.3.2): "W/" is
// ignored on either side.
bool etag_list_matches(std::string_view list, std::string_view etag) {
  size_t i = 0;
  while (i < list.size()) {
    char c = list[i];
    if (c == ' ' || c == '\t' || c == ',') {
      ++i;
      continue;
    }
    if (c == '*')
      return true;
    if (list.substr(i, 2) == "W/")
      i += 2;
    if (i >= list.size() || list[i] != '"')
      return false; // malformed: no match, so the full response goes out
    size_t close = list.find('"', i + 1);
    if (close == std::string_view::npos)
      return false;
    if (list.substr(i, close - i + 1) == etag)
      return true;
    i = close + 1;
  }
  return false;
}

namespace {

bool parse_offset(std::string_view s, int64_t* out) {
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v > INT64_MAX)
    return false;
  *out = static_cast<int64_t>(v);
  return true;
}

} // namespace

// One byte range (RFC 9110 14.1.2). Several ranges are answered with the whole file, which
// the RFC allows and which spares us multipart/byteranges; a malformed header is ignored.
RangeKind parse_range(std::string_view v, int64_t size, int64_t* first, int64_t* last) {
  v = http::trim_ows(v);
  if (v.size() < 6 || !http::iequals(v.substr(0, 6), "bytes="))
    return RangeKind::FULL;
  v.remove_prefix(6);
  if (v.find(',') != std::string_view::npos)
    return RangeKind::FULL;
  size_t dash = v.find('-');
  if (dash == std::string_view::npos)
    return RangeKind::FULL;
  std::string_view a = http::trim_ows(v.substr(0, dash)), b = http::trim_ows(v.substr(dash + 1));
  int64_t f = 0, l = 0;
  if (a.empty()) { // "-N": the last N bytes
    if (!parse_offset(b, &l))
      return RangeKind::FULL;
    if (l == 0 || size == 0)
      return RangeKind::UNSATISFIABLE;
    *first = size > l ? size - l : 0;
    *last = size - 1;
    return RangeKind::PARTIAL;
  }
  if (!parse_offset(a, &f))
    return RangeKind::FULL;
  if (b.empty()) {
    l = INT64_MAX;
  } else if (!parse_offset(b, &l) || l < f) {
    return RangeKind::FULL;
  }
  if (f >= size)
    return RangeKind::UNSATISFIABLE;
  *first = f;
  *last = std::min(l, size - 1);
  return RangeKind::PARTIAL;
}

// "bytes FIRST-LAST/SIZE", or "bytes */SIZE" when first < 0; out holds kContentRangeMax bytes.
std::string_view format_content_range(char* out, int64_t first, int64_t last, int64_t size) {
  char* end = out + kContentRangeMax;
  char* p = std::copy_n("bytes ", 6, out);
  if (first < 0) {
    *p++ = '*';
  } else {
    p = std::to_chars(p, end, first).ptr;
    *p++ = '-';
    p = std::to_chars(p, end, last).ptr;
  }
  *p++ = '/';
  p = std::to_chars(p, end, size).ptr;
  return {out, static_cast<size_t>(p - out)};
}

} // namespace portico::server
