#include "http/nghttp2_check.h"

#include <atomic>
#include <cassert>
#include <cstdio>
#include <nghttp2/nghttp2.h>

namespace portico::http {

void nghttp2_call_failed(int rv, const char* call, const char* file, int line) {
  // A bug repeated per request must not fill the log: the first few say where it is.
  static std::atomic<int> reported{0};
  if (reported.fetch_add(1, std::memory_order_relaxed) < 16)
    std::fprintf(stderr, "portico: %s:%d: %s failed: %s\n", file, line, call, nghttp2_strerror(rv));
  assert(!"an nghttp2 call that cannot fail did");
}

} // namespace portico::http
