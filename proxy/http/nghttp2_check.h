#pragma once
// For the nghttp2 calls that fail only on the caller's mistake (an argument out of range, a
// stream that is not open, a call in the wrong session state) or when memory runs out. Such a
// failure is a bug: debug builds stop at it; release builds say so on stderr and go on, since
// nghttp2 left the session as it was. Calls that fail for reasons of the peer's making are
// checked where they are made, not with this.
#define PORTICO_NGHTTP2_MUST(call)                                                                 \
  do {                                                                                             \
    if (int portico_rv_ = (call); portico_rv_ != 0) [[unlikely]]                                   \
      ::portico::http::nghttp2_call_failed(portico_rv_, #call, __FILE__, __LINE__);                \
  } while (0)

namespace portico::http {

void nghttp2_call_failed(int rv, const char* call, const char* file, int line);

} // namespace portico::http
