#include "core/http_date.h"

#include <cstdio>
#include <cstring>

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

namespace {

// Reads n digits at s[i..], advancing i; -1 when they are not all digits.
int digits(std::string_view s, size_t& i, size_t n) {
  if (i + n > s.size())
    return -1;
  int v = 0;
  for (size_t k = 0; k < n; ++k) {
    char c = s[i + k];
    if (c < '0' || c > '9')
      return -1;
    v = v * 10 + (c - '0');
  }
  i += n;
  return v;
}

bool literal(std::string_view s, size_t& i, std::string_view want) {
  if (s.substr(i, want.size()) != want)
    return false;
  i += want.size();
  return true;
}

// A name from table (case-sensitive, as HTTP-date is), advancing i; -1 when none.
template <size_t N> int name(std::string_view s, size_t& i, const char* const (&table)[N]) {
  for (size_t k = 0; k < N; ++k)
    if (literal(s, i, table[k]))
      return static_cast<int>(k);
  return -1;
}

// "HH:MM:SS"
bool time_of_day(std::string_view s, size_t& i, tm& g) {
  g.tm_hour = digits(s, i, 2);
  if (g.tm_hour < 0 || !literal(s, i, ":"))
    return false;
  g.tm_min = digits(s, i, 2);
  if (g.tm_min < 0 || !literal(s, i, ":"))
    return false;
  g.tm_sec = digits(s, i, 2);
  return g.tm_sec >= 0 && g.tm_hour < 24 && g.tm_min < 60 && g.tm_sec < 61;
}

// The day's name is read but not checked against the date, as nginx does not: a wrong one
// costs nothing to accept.
std::optional<time_t> checked(tm& g) {
  static constexpr int kDaysIn[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (g.tm_mon < 0 || g.tm_mday < 1 || g.tm_mday > kDaysIn[g.tm_mon])
    return std::nullopt;
  int mday = g.tm_mday;
  time_t t = timegm(&g); // normalises g: 29 Feb of a common year becomes 1 Mar
  if (g.tm_mday != mday)
    return std::nullopt;
  return t;
}

constexpr const char* kLongDays[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                     "Thursday", "Friday", "Saturday"};

} // namespace

std::optional<time_t> parse_http_date(std::string_view s) {
  tm g{};
  size_t i = 0;
  if (s.size() == kHttpDateLen && s[3] == ',') { // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
    if (name(s, i, kDays) < 0 || !literal(s, i, ", ") || (g.tm_mday = digits(s, i, 2)) < 0 ||
        !literal(s, i, " ") || (g.tm_mon = name(s, i, kMonths)) < 0 || !literal(s, i, " "))
      return std::nullopt;
    int year = digits(s, i, 4);
    if (year < 0 || !literal(s, i, " ") || !time_of_day(s, i, g) || !literal(s, i, " GMT"))
      return std::nullopt;
    g.tm_year = year - 1900;
    return checked(g);
  }
  if (s.size() == 24 && s[3] == ' ') { // asctime: Sun Nov  6 08:49:37 1994
    if (name(s, i, kDays) < 0 || !literal(s, i, " ") || (g.tm_mon = name(s, i, kMonths)) < 0 ||
        !literal(s, i, " "))
      return std::nullopt;
    if (s[i] == ' ')
      ++i, g.tm_mday = digits(s, i, 1);
    else
      g.tm_mday = digits(s, i, 2);
    if (g.tm_mday < 0 || !literal(s, i, " ") || !time_of_day(s, i, g) || !literal(s, i, " "))
      return std::nullopt;
    int year = digits(s, i, 4);
    if (year < 0 || i != s.size())
      return std::nullopt;
    g.tm_year = year - 1900;
    return checked(g);
  }
  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
  if (name(s, i, kLongDays) < 0 || !literal(s, i, ", ") || (g.tm_mday = digits(s, i, 2)) < 0 ||
      !literal(s, i, "-") || (g.tm_mon = name(s, i, kMonths)) < 0 || !literal(s, i, "-"))
    return std::nullopt;
  int yy = digits(s, i, 2);
  if (yy < 0 || !literal(s, i, " ") || !time_of_day(s, i, g) || !literal(s, i, " GMT") ||
      i != s.size())
    return std::nullopt;
  // Two digits: the year with those digits that is not more than 50 years ahead (RFC 9110
  // 5.6.7).
  tm now;
  time_t t = time(nullptr);
  gmtime_r(&t, &now);
  int year = now.tm_year + 1900 - (now.tm_year + 1900) % 100 + yy;
  if (year > now.tm_year + 1900 + 50)
    year -= 100;
  g.tm_year = year - 1900;
  return checked(g);
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
