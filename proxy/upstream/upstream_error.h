#pragma once
// How an upstream exchange fails, and how far its request got before it did: what the upstream
// connections report and the retry policy judges.
#include <cstdint>

namespace portico::upstream {

enum class UpstreamError : uint8_t {
  CONNECT_REFUSED,  // refused, unreachable, no such socket: 502
  CONNECT_TIMEOUT,  // 504
  RESET,            // closed or reset before the response was complete: 502 (or a retry)
  RESPONSE_TIMEOUT, // no response byte in time: 504
  PROTOCOL_ERROR,   // not HTTP: 502
  // The proxy itself is out of file descriptors or memory for a new connection: 503, and the
  // endpoint is not held down (nothing is wrong with it).
  LOCAL_RESOURCES,
};

const char* to_string(UpstreamError e);
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
