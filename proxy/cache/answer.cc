#include "cache/answer.h"

#include "core/http_date.h"

#include <charconv>

namespace portico::cache {

namespace {

// A 304 carries the fields a 200 would that describe the stored response (RFC 9110 15.4.5).
bool kept_in_304(std::string_view n) {
  return n == "cache-control" || n == "content-location" || n == "etag" || n == "expires" ||
         n == "vary" || n == "last-modified";
}

bool not_modified(const StoredResponse& r, const http::RequestHead& req) {
  bool inm_present = false, inm_match = false;
  std::string_view opaque = r.etag.starts_with("W/") ? r.etag.substr(2) : r.etag; // weak match
  const http::Header* ims = nullptr;
  for (const auto& h : req.headers) {
    if (h.name == "if-none-match") {
      inm_present = true;
      inm_match = inm_match || (!opaque.empty() && server::etag_list_matches(h.value, opaque));
    } else if (h.name == "if-modified-since" && !ims) {
      ims = &h;
    }
  }
  if (inm_present) // If-Modified-Since counts only without it (RFC 9110 13.2.2)
    return inm_match;
  if (!ims || (req.method != "GET" && req.method != "HEAD") || r.status != 200)
    return false;
  auto since = core::parse_http_date(ims->value);
  if (!since)
    return false;
  std::string_view modified = !r.last_modified.empty() ? r.last_modified : r.date;
  auto at =
      modified.empty() ? std::optional<time_t>(r.fresh.date) : core::parse_http_date(modified);
  return at && *at <= *since;
}

bool if_range_holds(const StoredResponse& r, std::string_view v) {
  if (v.starts_with('"'))
    return !r.etag.empty() && v == r.etag; // strong comparison: a weak tag never holds
  if (v.starts_with("W/"))
    return false;
  auto t = core::parse_http_date(v);
  auto lm = r.last_modified.empty() ? std::nullopt : core::parse_http_date(r.last_modified);
  return t && lm && *t == *lm;
}

} // namespace

Answer answer_from(const StoredResponse& r, const http::RequestHead& req, time_t now,
                   std::string_view cache_status, std::vector<http::Header>& fields, char* age,
                   char* content_range) {
  Answer a;
  a.status = r.status;
  a.date = r.date;
  fields.clear();
  int64_t current_age = r.fresh.age(now);
  size_t age_len = static_cast<size_t>(std::to_chars(age, age + 24, current_age).ptr - age);
  bool complete = r.body && r.body->complete;
  int64_t size = complete ? static_cast<int64_t>(r.body->size()) : r.length;

  if (not_modified(r, req)) {
    a.status = 304;
    for (const auto& f : r.fields)
      if (kept_in_304(f.name))
        fields.push_back(f);
    fields.push_back({"age", {age, age_len}});
    fields.push_back({"cache-status", cache_status});
    a.content_length = 0;
    a.length = 0;
    return a;
  }
  for (const auto& f : r.fields)
    fields.push_back(f);
  fields.push_back({"age", {age, age_len}});
  fields.push_back({"cache-status", cache_status});
  a.content_length = size;

  const http::Header* range = req.find("range");
  if (range && complete && r.status == 200 && req.method == "GET") {
    const http::Header* if_range = req.find("if-range");
    int64_t first = 0, last = size - 1;
    auto kind = (!if_range || if_range_holds(r, if_range->value))
                    ? server::parse_range(range->value, size, &first, &last)
                    : server::RangeKind::FULL;
    if (kind == server::RangeKind::PARTIAL) {
      a.status = 206;
      a.offset = first;
      a.length = last - first + 1;
      a.content_length = a.length;
      fields.push_back(
          {"content-range", server::format_content_range(content_range, first, last, size)});
    } else if (kind == server::RangeKind::UNSATISFIABLE) {
      a.status = 416;
      a.length = 0;
      a.content_length = 0;
      fields.push_back(
          {"content-range", server::format_content_range(content_range, -1, -1, size)});
    }
  }
  return a;
}

} // namespace portico::cache
