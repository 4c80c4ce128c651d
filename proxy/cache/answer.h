#pragma once
// The head a request gets from a stored response (RFC 9111 4): its fields with Age and
// Cache-Status, or a 304 when the request's own condition holds (If-None-Match, else
// If-Modified-Since against Last-Modified or Date), or a 206/416 for a Range of a complete
// 200 (If-Range honoured).
#include "cache/stored_response.h"
#include "http/request_head.h"
#include "server/conditional_request.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace portico::cache {

struct Answer {
  int status = 200;
  int64_t content_length = -1; // -1: the body is still arriving (a collapsed fill)
  int64_t offset = 0;          // the body bytes it sends: from offset, length (-1: to its end)
  int64_t length = -1;
  std::string_view date; // the stored Date
};

// Fields go into fields (views into r, cache_status, and the two buffers, which must outlive
// the head's sending: age holds 24 bytes, content_range server::kContentRangeMax).
Answer answer_from(const StoredResponse& r, const http::RequestHead& req, time_t now,
                   std::string_view cache_status, std::vector<http::Header>& fields, char* age,
                   char* content_range);

} // namespace portico::cache
