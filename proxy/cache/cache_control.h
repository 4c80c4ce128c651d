#pragma once
// Cache-Control directives (RFC 9111 5.2) of a request or a response, read from every field
// line of one field (Cache-Control, or a targeted one such as CDN-Cache-Control, RFC 9213).
// A directive's first occurrence counts (RFC 9111 4.2.1); one with a value that is no
// delta-seconds (RFC 9111 1.2.2) is kInvalid, which makes a response stale.
#include "http/header.h"

#include <cstdint>
#include <span>
#include <string_view>

namespace portico::cache {

struct CacheControl {
  static constexpr int64_t kAbsent = -1;
  static constexpr int64_t kInvalid = -2; // present, but its value is no delta-seconds
  static constexpr int64_t kAny = -3;     // max-stale without a value: any staleness
  // The largest delta-seconds a cache need represent; larger ones are this (RFC 9111 1.2.2).
  static constexpr int64_t kMaxDelta = 2147483648;

  int64_t max_age = kAbsent;
  int64_t s_maxage = kAbsent;
  int64_t stale_while_revalidate = kAbsent;
  int64_t stale_if_error = kAbsent;
  int64_t max_stale = kAbsent; // request
  int64_t min_fresh = kAbsent; // request
  bool present = false;        // the field was there at all
  bool no_store = false;
  bool no_cache = false; // unqualified: every use revalidated
  bool private_ = false; // unqualified: no shared cache stores it
  bool public_ = false;
  bool must_revalidate = false;
  bool proxy_revalidate = false;
  bool must_understand = false;
  bool only_if_cached = false; // request
  bool immutable = false;
  // The qualified forms' field names (no-cache="Set-Cookie, X-Foo"), to leave out when
  // storing; views into the field value.
  std::string_view no_cache_fields;
  std::string_view private_fields;
};

// Reads each field line named name (lower case) of fields into one CacheControl.
CacheControl parse_cache_control(std::span<const http::Header> fields, std::string_view name);

// A delta-seconds (RFC 9111 1.2.2): digits only, capped at kMaxDelta; -1 when it is none.
int64_t parse_delta_seconds(std::string_view v);

// Calls f(name) for each field name of a qualified directive's list ("a, b").
template <typename F> void for_each_listed(std::string_view list, F&& f) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = http::trim_ows(list.substr(0, comma));
    if (!item.empty())
      f(item);
    if (comma == std::string_view::npos)
      break;
    list.remove_prefix(comma + 1);
  }
}

} // namespace portico::cache
