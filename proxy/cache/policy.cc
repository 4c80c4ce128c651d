#include "cache/policy.h"

namespace portico::cache {

bool safe_method(std::string_view m) {
  return m == "GET" || m == "HEAD" || m == "OPTIONS" || m == "TRACE";
}

CacheControl response_directives(std::span<const std::string> targeted,
                                 std::span<const http::Header> fields) {
  for (const auto& name : targeted) {
    CacheControl t = parse_cache_control(fields, name);
    if (t.present)
      return t;
  }
  return parse_cache_control(fields, "cache-control");
}

bool cookie_field(std::string_view name) {
  return name == "set-cookie" || name == "set-cookie2";
}

bool sets_cookie(std::span<const http::Header> fields) {
  for (const auto& f : fields)
    if (cookie_field(f.name))
      return true;
  return false;
}

bool storable(int status, std::span<const http::Header> fields, const CacheControl& cc,
              bool authorized) {
  if (status < 200 || status == 206 || status == 304)
    return false;
  if (cc.must_understand ? !understood_status(status) : cc.no_store)
    return false;
  if (cc.private_)
    return false;
  if (authorized && !cc.public_ && !cc.must_revalidate && cc.s_maxage < 0)
    return false;
  bool expires = false, last_modified = false;
  for (const auto& f : fields) {
    expires |= f.name == "expires";
    last_modified |= f.name == "last-modified";
  }
  return cc.public_ || expires || cc.max_age != CacheControl::kAbsent ||
         cc.s_maxage != CacheControl::kAbsent ||
         (heuristically_cacheable(status) && last_modified) || cc.no_cache;
}

bool while_revalidating(const Freshness& f, const CacheControl& req, time_t now) {
  if (f.no_cache || f.no_stale || f.never_fresh || f.stale_while_revalidate <= 0)
    return false;
  if (req.no_cache || req.max_age != CacheControl::kAbsent ||
      req.min_fresh != CacheControl::kAbsent)
    return false;
  int64_t ttl = f.ttl(now);
  return ttl <= 0 && -ttl < f.stale_while_revalidate;
}

bool usable_on_error(const Freshness& f, const CacheControl& req, time_t now) {
  if (f.no_cache || req.no_cache || (f.no_stale && f.ttl(now) <= 0))
    return false;
  return f.ttl(now) + f.stale_if_error > 0;
}

bool same_representation(const StoredResponse& r, std::span<const http::Header> fields) {
  for (const auto& f : fields) {
    if (f.name == "etag" && !r.etag.empty() && f.value != r.etag)
      return false;
    if (f.name == "last-modified" && !r.last_modified.empty() && f.value != r.last_modified)
      return false;
  }
  return true;
}

} // namespace portico::cache
