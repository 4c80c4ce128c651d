#pragma once
// The parts of a conditional or range request that need no file: If-None-Match lists and a
// single byte range (RFC 9110 13.1.2, 14.1.2), for static files.
#include <cstdint>
#include <string_view>

namespace portico::server {

// True when an If-None-Match list names etag, by weak comparison (RFC 9110 8.8.3.2): "W/" is
// ignored on either side.
bool etag_list_matches(std::string_view list, std::string_view etag);

enum class RangeKind {
  FULL,          // no usable Range: the whole file with 200
  PARTIAL,       // one satisfiable range: 206
  UNSATISFIABLE, // 416
};

// One byte range of a Range header value against a file of size bytes. Several ranges are
// answered with the whole file, which the RFC allows; a malformed header is ignored (FULL).
RangeKind parse_range(std::string_view v, int64_t size, int64_t* first, int64_t* last);

// "bytes FIRST-LAST/SIZE" is at most this long: three 19-digit numbers and their marks.
inline constexpr size_t kContentRangeMax = 6 + 19 + 1 + 19 + 1 + 19;
// "bytes FIRST-LAST/SIZE", or "bytes */SIZE" when first < 0; out holds kContentRangeMax bytes.
std::string_view format_content_range(char* out, int64_t first, int64_t last, int64_t size);

} // namespace portico::server
