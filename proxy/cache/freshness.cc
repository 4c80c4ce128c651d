#include "cache/freshness.h"

#include "core/http_date.h"

#include <algorithm>

namespace portico::cache {

namespace {

// The value of the one field line named name; nothing when there are none or several.
std::string_view single(std::span<const http::Header> fields, std::string_view name, int& count) {
  std::string_view v;
  count = 0;
  for (const auto& f : fields)
    if (f.name == name) {
      v = f.value;
      ++count;
    }
  return count == 1 ? v : std::string_view();
}

} // namespace

bool heuristically_cacheable(int status) {
  switch (status) {
  case 200:
  case 203:
  case 204:
  case 206:
  case 300:
  case 301:
  case 308:
  case 404:
  case 405:
  case 410:
  case 414:
  case 501: return true;
  default: return false;
  }
}

bool understood_status(int status) {
  return heuristically_cacheable(status) || status == 302 || status == 303 || status == 307 ||
         status == 304 || status == 400 || status == 403 || status == 500 || status == 502 ||
         status == 503 || status == 504;
}

Freshness freshness_of(int status, const CacheControl& cc, std::span<const http::Header> fields,
                       std::string_view date_field, time_t request_time, time_t response_time,
                       const FreshnessPolicy& policy) {
  Freshness f;
  f.response_time = response_time;
  std::optional<time_t> date =
      date_field.empty() ? std::nullopt : core::parse_http_date(date_field);
  f.date = date ? *date : response_time;

  // Age (5.1): of a list (one line or several), the first member; one that is no
  // delta-seconds makes the response stale rather than younger than it is.
  const http::Header* age = nullptr;
  for (const auto& h : fields)
    if (h.name == "age") {
      age = &h;
      break;
    }
  int64_t age_value = 0;
  if (age) {
    age_value = parse_delta_seconds(http::trim_ows(age->value.substr(0, age->value.find(','))));
    if (age_value < 0) {
      f.never_fresh = true;
      age_value = 0;
    }
  }
  int64_t apparent_age = std::max<int64_t>(0, response_time - f.date);
  int64_t corrected_age = age_value + std::max<int64_t>(0, response_time - request_time);
  f.initial_age = std::max(apparent_age, corrected_age);

  // Lifetime (4.2.1): s-maxage, then max-age, then Expires, then a heuristic.
  int64_t explicit_lifetime = -1;
  if (cc.s_maxage != CacheControl::kAbsent)
    explicit_lifetime = cc.s_maxage;
  else if (cc.max_age != CacheControl::kAbsent)
    explicit_lifetime = cc.max_age;
  if (explicit_lifetime == CacheControl::kInvalid) {
    f.never_fresh = true;
    explicit_lifetime = 0;
  }
  int expires_count = 0;
  std::string_view expires = single(fields, "expires", expires_count);
  if (explicit_lifetime < 0 && expires_count) {
    // An Expires that cannot be read, "0" above all, is in the past (5.3).
    std::optional<time_t> e = expires.empty() ? std::nullopt : core::parse_http_date(expires);
    explicit_lifetime = e ? std::max<int64_t>(0, *e - f.date) : 0;
  }
  if (explicit_lifetime >= 0) {
    f.lifetime = explicit_lifetime;
  } else if (policy.heuristic_max > 0 && (heuristically_cacheable(status) || cc.public_)) {
    int lm_count = 0;
    std::string_view lm = single(fields, "last-modified", lm_count);
    std::optional<time_t> modified = lm.empty() ? std::nullopt : core::parse_http_date(lm);
    if (modified && *modified < f.date) {
      auto guess =
          static_cast<int64_t>(static_cast<double>(f.date - *modified) * policy.heuristic_fraction);
      f.lifetime = std::min(guess, policy.heuristic_max);
      f.heuristic = true;
    }
  }
  f.no_cache = cc.no_cache;
  f.no_stale = cc.must_revalidate || cc.proxy_revalidate || cc.s_maxage >= 0;
  f.stale_while_revalidate = std::max<int64_t>(0, cc.stale_while_revalidate);
  f.stale_if_error =
      cc.stale_if_error >= 0 ? cc.stale_if_error : std::max<int64_t>(0, policy.stale_if_error);
  return f;
}

Reuse reuse_of(const Freshness& f, const CacheControl& req, time_t now) {
  if (f.no_cache || req.no_cache)
    return Reuse::REVALIDATE;
  int64_t age = f.age(now);
  if (req.max_age == CacheControl::kInvalid || (req.max_age >= 0 && age > req.max_age))
    return Reuse::REVALIDATE;
  int64_t ttl = f.ttl(now);
  if (req.min_fresh >= 0 && ttl < req.min_fresh)
    return Reuse::REVALIDATE;
  if (ttl > 0)
    return Reuse::FRESH;
  if (!f.no_stale && !f.never_fresh &&
      (req.max_stale == CacheControl::kAny || (req.max_stale >= 0 && -ttl <= req.max_stale)))
    return Reuse::STALE_OK;
  return Reuse::REVALIDATE;
}

} // namespace portico::cache
