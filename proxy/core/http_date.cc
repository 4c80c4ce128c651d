#include "core/http_date.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace portico::core {

namespace {
constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
} // namespace

void format_http_date(time_t t, char* out) {
  tm g;
  gmtime_r(&t, &g);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[g.tm_wday], g.tm_mday,
                kMonths[g.tm_mon], g.tm_year + 1900, g.tm_hour, g.tm_min, g.tm_sec);
  std::memcpy(out, buf, kHttpDateLen);
}

std::optional<time_t> parse_http_date(std::string_view s) {
  if (s.size() != kHttpDateLen)
    return std::nullopt;
  std::string z(s);
  tm g{};
  const char* end = strptime(z.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &g);
  if (!end || *end != '\0')
    return std::nullopt;
  return timegm(&g);
}

std::string_view http_date_now() {
  thread_local time_t cached_at = 0;
  thread_local char cached[kHttpDateLen];
  time_t now = time(nullptr);
  if (now != cached_at) {
    format_http_date(now, cached);
    cached_at = now;
  }
  return {cached, kHttpDateLen};
}

} // namespace portico::core
