#pragma once
// IMF-fixdate formatting and parsing (RFC 9110 5.6.7), with a per-thread cache of "now" so that
// the Date header costs a comparison per response, not a strftime.
#include <ctime>
#include <optional>
#include <string_view>

namespace portico::core {

inline constexpr size_t kHttpDateLen = 29; // "Sun, 06 Nov 1994 08:49:37 GMT"

// Writes exactly kHttpDateLen bytes.
void format_http_date(time_t t, char* out);
// Accepts IMF-fixdate only (what every current client sends).
std::optional<time_t> parse_http_date(std::string_view s);
// The current time as an HTTP date, refreshed at most once a second per thread.
std::string_view http_date_now();

} // namespace portico::core
