#include "server/file_response.h"

#include "core/http_date.h"

#include <charconv>
#include <optional>

namespace portico::server {

void format_meta(FileMeta& m, std::string_view type, int64_t size, timespec mtime) {
  m.content_type = type;
  m.size = size;
  m.mtime = mtime.tv_sec;
  // Nanoseconds, so that a rewrite within the same second with the same size still changes it.
  uint64_t ns =
      static_cast<uint64_t>(mtime.tv_sec) * 1000000000u + static_cast<uint64_t>(mtime.tv_nsec);
  char* p = m.etag;
  char* end = m.etag + sizeof m.etag;
  *p++ = '"';
  p = std::to_chars(p, end, ns, 16).ptr;
  *p++ = '-';
  p = std::to_chars(p, end, static_cast<uint64_t>(size), 16).ptr;
  *p++ = '"';
  m.etag_len = static_cast<size_t>(p - m.etag);
  core::format_http_date(mtime.tv_sec, m.last_modified);
}

namespace {

// An HTTP date from a conditional header; what clients echo back is recognised without a parse
// (which allocates).
std::optional<time_t> date_of(std::string_view v, const FileMeta& m) {
  return v == m.last_modified_view() ? m.mtime : core::parse_http_date(v);
}

// If-Range holds when its validator still names this version: an ETag by strong comparison, or
// exactly the Last-Modified date.
bool if_range_holds(std::string_view v, const FileMeta& m) {
  if (v.starts_with('"') || v.starts_with("W/"))
    return v == m.etag_view();
  auto t = date_of(v, m);
  return t && *t == m.mtime;
}

} // namespace

BodyPlan plan_file_response(const http::RequestHead& req, const FileMeta& m,
                            http::ResponseHead& head, char* content_range) {
  bool inm_present = false, inm_match = false;
  const http::Header* ims = nullptr;
  const http::Header* range = nullptr;
  const http::Header* if_range = nullptr;
  for (const auto& h : req.headers) {
    if (h.name.size() < 5 || (h.name[0] != 'i' && h.name[0] != 'r'))
      continue;
    if (h.name == "if-none-match") {
      inm_present = true; // a list may arrive split over several fields
      inm_match = inm_match || etag_list_matches(h.value, m.etag_view());
    } else if (h.name == "if-modified-since") {
      if (!ims)
        ims = &h;
    } else if (h.name == "range") {
      range = &h;
    } else if (h.name == "if-range") {
      if_range = &h;
    }
  }
  // If-Modified-Since counts only without If-None-Match (RFC 9110 13.2.2).
  std::optional<time_t> since = !inm_present && ims ? date_of(ims->value, m) : std::nullopt;
  if (inm_present ? inm_match : (since && m.mtime <= *since)) {
    head.status = 304;
    if (!m.content_encoding.empty())
      head.add("content-encoding", m.content_encoding);
    head.add("etag", m.etag_view());
    head.add("last-modified", m.last_modified_view());
    return {0, 0, 304};
  }
  int64_t first = 0, last = m.size - 1;
  if (range && req.method == "GET" && (!if_range || if_range_holds(if_range->value, m))) {
    RangeKind kind = parse_range(range->value, m.size, &first, &last);
    if (kind == RangeKind::UNSATISFIABLE) {
      head.status = 416;
      head.content_length = 0;
      head.add("content-range", format_content_range(content_range, -1, -1, m.size));
      return {0, 0, 416};
    }
    if (kind == RangeKind::PARTIAL) {
      head.status = 206;
      head.add("content-range", format_content_range(content_range, first, last, m.size));
    } else {
      first = 0;
      last = m.size - 1;
    }
  }
  head.content_length = last - first + 1;
  head.add("content-type", m.content_type);
  if (!m.content_encoding.empty())
    head.add("content-encoding", m.content_encoding);
  head.add("etag", m.etag_view());
  head.add("last-modified", m.last_modified_view());
  head.add("accept-ranges", "bytes");
  if (req.is_head())
    return {0, 0, head.status};
  return {first, head.content_length, head.status};
}

} // namespace portico::server
