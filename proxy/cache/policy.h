#pragma once
// The cache's decisions that need nothing but a response's or request's fields: what a shared
// cache may store (RFC 9111 3), which directives rule (RFC 9213), when a stale response may
// still answer (RFC 5861), and whether a response is the stored one's representation.
#include "cache/cache_control.h"
#include "cache/stored_response.h"

#include <ctime>
#include <span>
#include <string>
#include <string_view>

namespace portico::cache {

// GET, HEAD, OPTIONS, TRACE: a request that changes nothing, and invalidates nothing.
bool safe_method(std::string_view method);

// The directives in charge of a response: the first targeted field it has (RFC 9213), else
// Cache-Control's.
CacheControl response_directives(std::span<const std::string> targeted,
                                 std::span<const http::Header> fields);

// Set-Cookie, or the obsolete Set-Cookie2 (RFC 2965): a field that gives one client its own
// state, and that a cache storing it would give to the next.
bool cookie_field(std::string_view name);
bool sets_cookie(std::span<const http::Header> fields);

// Whether a shared cache may store a response with status, fields and directives cc, to a
// request with or without Authorization (RFC 9111 3, 3.5). A no-store one is not taken in.
bool storable(int status, std::span<const http::Header> fields, const CacheControl& cc,
              bool authorized);

// stale-while-revalidate (RFC 5861 3): f is stale by no more than it allows, and nothing in
// the request (req) asks for fresher.
bool while_revalidating(const Freshness& f, const CacheControl& req, time_t now);

// stale-if-error (RFC 5861 4): the origin failed, and f may stand in.
bool usable_on_error(const Freshness& f, const CacheControl& req, time_t now);

// The validators fields send match r's (those both have): the same representation.
bool same_representation(const StoredResponse& r, std::span<const http::Header> fields);

} // namespace portico::cache
