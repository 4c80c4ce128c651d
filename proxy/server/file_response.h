#pragma once
// One version of a file as a response: its validators formatted once, and the head a request
// gets for it (304 for a matching If-None-Match or If-Modified-Since, 206 or 416 for a Range,
// If-Range honoured, HEAD without a body).
#include "http/request_head.h"
#include "http/response_head.h"
#include "server/conditional_request.h"

#include <cstdint>
#include <ctime>
#include <string_view>

namespace portico::server {

struct FileMeta {
  std::string_view content_type;
  std::string_view content_encoding; // a precompressed sibling's coding ("br"), or empty
  int64_t size = 0;
  time_t mtime = 0;
  char etag[48]; // strong: "<mtime ns hex>-<size hex>", quotes included
  size_t etag_len = 0;
  char last_modified[29]; // IMF-fixdate
  std::string_view etag_view() const { return {etag, etag_len}; }
  std::string_view last_modified_view() const { return {last_modified, sizeof last_modified}; }
};

void format_meta(FileMeta& m, std::string_view type, int64_t size, timespec mtime);

// What follows the head: length bytes from offset (0 when the head is all: HEAD, 304, 416, an
// empty file).
struct BodyPlan {
  int64_t offset = 0;
  int64_t length = 0;
  int status = 200;
};

// Fills head (status, length, validators, type, Content-Range) for req against m. The views it
// adds live in m and in content_range, which holds kContentRangeMax bytes and must outlive the
// head's sending.
BodyPlan plan_file_response(const http::RequestHead& req, const FileMeta& m,
                            http::ResponseHead& head, char* content_range);

} // namespace portico::server
