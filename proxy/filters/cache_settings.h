#pragma once
// A route's `cache` key (filters/cache_settings.cc reads it): an HTTP cache (RFC 9111) in
// front of the route's cluster (filters/cache.cc).
#include "cache/cache_key.h"
#include "cache/freshness.h"
#include "filters/cache_shared_fills.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace portico::filters {

struct CacheSettings {
  size_t memory = 64u << 20;    // bytes, each worker's store
  size_t max_object = 8u << 20; // a larger response is passed on, not stored
  size_t max_variants = 16;     // per key (Vary)
  // A directory the responses are also kept in (cache/disk_store.h), and the bytes they may
  // take there over every worker; empty: memory only.
  std::string disk;
  size_t disk_size = 1u << 30;
  cache::KeyParts key;
  cache::FreshnessPolicy freshness;
  // A miss waits this long (seconds) for another request's fetch of its key before going
  // upstream itself; 0: every miss goes upstream.
  double lock_timeout = 5;
  // A key whose response could not be stored is fetched without waiting for this long.
  int64_t pass_for = 120;
  // Cache-Control fields targeted at this cache (RFC 9213), lower case, the most specific
  // first ("portico-cache-control", "cdn-cache-control"): the first a response has is used
  // instead of Cache-Control.
  std::vector<std::string> targeted;
  std::string name = "Portico"; // the cache's name in Cache-Status (RFC 9211)
  // What a response with Set-Cookie does: PASS, it is not stored (nginx, Varnish: a stored
  // session cookie would be given to every client that asks next); STORE, it is stored with
  // its Set-Cookie as RFC 9111 allows, for origins whose cookies are the same for everyone.
  enum class SetCookie { PASS, STORE } set_cookie = SetCookie::PASS;
  // The route's fetches in flight over all its workers (one per configuration load).
  std::shared_ptr<SharedFills> fills = std::make_shared<SharedFills>();
};

} // namespace portico::filters
