#pragma once
// How an upstream exchange fails, and how far its request got before it did: what the upstream
// connections report and the retry policy judges.
#include "metrics/error_kinds.h"

#include <cstdint>

namespace portico::upstream {

// Its values and their meaning are declared with the metrics' error kinds (error_kinds.h),
// which begin with these, in this order.
enum class UpstreamError : uint8_t {
#define PORTICO_UPSTREAM_ENUM(name, label) name,
  PORTICO_UPSTREAM_FAILURES(PORTICO_UPSTREAM_ENUM)
#undef PORTICO_UPSTREAM_ENUM
};

inline metrics::ErrorKind kind_of(UpstreamError e) {
  return static_cast<metrics::ErrorKind>(e);
}
inline const char* to_string(UpstreamError e) {
  return metrics::kErrorKindNames[static_cast<size_t>(e)];
}
#define PORTICO_UPSTREAM_SAME(name, label)                                                         \
  static_assert(static_cast<size_t>(UpstreamError::name) ==                                        \
                static_cast<size_t>(metrics::ErrorKind::name));
PORTICO_UPSTREAM_FAILURES(PORTICO_UPSTREAM_SAME)
#undef PORTICO_UPSTREAM_SAME

// The application's slowness (an answer or an upload that stalled), not a lost request: never
// sent again.
inline bool is_timeout(UpstreamError e) {
  return e == UpstreamError::RESPONSE_TIMEOUT || e == UpstreamError::SEND_TIMEOUT;
}

// The connection never came up: nothing of the request reached the upstream.
inline bool is_connect_failure(UpstreamError e) {
  return e == UpstreamError::CONNECT_REFUSED || e == UpstreamError::CONNECT_TIMEOUT;
}

// How far a failed request got: whether sending it again could have the application apply it
// twice. Only the upstream side can tell; the request decides whether to retry (retry_policy.h).
enum class Delivery : uint8_t {
  NOT_DELIVERED, // provably never reached the application: connect failed, stream refused or
                 // above a GOAWAY's last-stream-id, never submitted
  UNANSWERED,    // may have reached it; not one response byte came back
  ANSWERED,      // response bytes arrived (or the upstream timed out): never sent again
};

} // namespace portico::upstream
