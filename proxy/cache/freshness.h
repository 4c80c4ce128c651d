#pragma once
// When a stored response may be reused without asking the origin (RFC 9111 4.2): its
// freshness lifetime and age, worked out once when it is stored, and what a request asks of
// them (4.2.4, 5.2.1).
#include "cache/cache_control.h"

#include <cstdint>
#include <ctime>
#include <span>

namespace portico::cache {

struct FreshnessPolicy {
  // Heuristic freshness (RFC 9111 4.2.2) for a response with Last-Modified and no explicit
  // lifetime: this fraction of its age at the time, at most heuristic_max seconds (0: none).
  double heuristic_fraction = 0.1;
  int64_t heuristic_max = 86400;
  // stale-if-error for responses that do not say (seconds; 0: never).
  int64_t stale_if_error = 0;
};

// What reuse depends on, read from a response's head once it is stored.
struct Freshness {
  int64_t lifetime = 0;    // freshness lifetime, seconds
  int64_t initial_age = 0; // corrected_initial_age (4.2.3)
  time_t response_time = 0;
  time_t date = 0;          // its Date, or response_time without a valid one
  bool never_fresh = false; // an Age or Expires that cannot be read: stale from the start
  bool no_cache = false;    // every use is revalidated
  bool no_stale = false;    // must-revalidate, proxy-revalidate or s-maxage: never served stale
  bool heuristic = false;   // the lifetime is a guess from Last-Modified
  int64_t stale_while_revalidate = 0;
  int64_t stale_if_error = 0;

  int64_t age(time_t now) const {
    return initial_age + (now > response_time ? now - response_time : 0);
  }
  // Seconds of freshness left at now; 0 or less: stale.
  int64_t ttl(time_t now) const { return never_fresh ? -1 : lifetime - age(now); }
};

// Statuses a cache may store without explicit freshness (RFC 9110 15.1): heuristically
// cacheable ones.
bool heuristically_cacheable(int status);
// Statuses whose meaning Portico's cache knows (for must-understand, RFC 9111 5.2.2.3).
bool understood_status(int status);

// The freshness of a response with cc (its Cache-Control, or the targeted field in charge),
// fields (its header fields) and the upstream's Date, received at response_time for a request
// sent at request_time.
Freshness freshness_of(int status, const CacheControl& cc, std::span<const http::Header> fields,
                       std::string_view date, time_t request_time, time_t response_time,
                       const FreshnessPolicy& policy);

// How a stored response with f may answer a request with request_cc at now.
enum class Reuse : uint8_t {
  FRESH,      // as it is
  STALE_OK,   // stale, but the request's max-stale allows it
  REVALIDATE, // ask the origin first (stale, no-cache on either side, too old for the request)
};
Reuse reuse_of(const Freshness& f, const CacheControl& request_cc, time_t now);

} // namespace portico::cache
