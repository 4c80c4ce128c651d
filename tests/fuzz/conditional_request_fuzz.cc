// What a static file request brings from the network besides its head's syntax: Range and
// If-None-Match values, and the path. Never a crash; a partial range always lies within the
// file; a decoded path never holds a NUL or a backslash and never outgrows its buffer.
#include "server/conditional_request.h"
#include "server/static_path.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

using namespace portico::server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (int64_t file : {int64_t{0}, int64_t{1}, int64_t{1000}, INT64_MAX}) {
    int64_t first = -1, last = -1;
    if (parse_range(in, file, &first, &last) == RangeKind::PARTIAL &&
        (first < 0 || last < first || last >= file))
      std::abort();
  }
  etag_list_matches(in, "\"5f2-18c\"");
  char out[64];
  size_t len = 0;
  if (decode_path(in, out, sizeof out, &len) == 0) {
    std::string_view decoded(out, len);
    if (len > sizeof out || decoded.find('\0') != std::string_view::npos ||
        decoded.find('\\') != std::string_view::npos)
      std::abort();
    if (decoded == ".." && !has_dot_dot_segment(decoded))
      std::abort();
    has_dot_file(decoded);
  }
  return 0;
}
