// Range and If-None-Match values from the network: never a crash, and a partial range always
// lies within the file.
#include "server/conditional_request.h"

#include <cstdint>
#include <cstdlib>
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
  return 0;
}
