#pragma once
// What an upstream connection reports to the request it carries (ProxiedExchange), and how a
// request waits in a pool's queue. Callbacks may arrive inside the connection's own libev
// callbacks; a client that ends its exchange in one of them must not touch the connection after.
#include <cstdint>
#include <string_view>

namespace portico::http {
struct UpstreamResponseHead;
}

namespace portico::upstream {

class UpstreamStream;

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

class UpstreamClient {
public:
  virtual ~UpstreamClient() = default;
  // A way upstream is this request's now (a connection fresh and maybe still connecting, one
  // from the pool, or a stream of a shared connection). What is sent on it before the
  // connection is up goes out once it is.
  virtual void on_upstream_ready(UpstreamStream& up) = 0;
  virtual void on_upstream_head(const http::UpstreamResponseHead& head) = 0;
  virtual void on_upstream_body(std::string_view data) = 0;
  // A trailer field of a chunked response, before on_upstream_end. The views are valid only
  // during the call.
  virtual void on_upstream_trailer(std::string_view name, std::string_view value) {}
  // The response is complete; the connection is no longer this request's.
  virtual void on_upstream_end() = 0;
  // The connection or stream failed; it is no longer this request's. delivery: whether the
  // application may have seen the request.
  virtual void on_upstream_error(UpstreamError e, Delivery delivery) = 0;
  // The request output fell below the low watermark: more request body may be written.
  virtual void on_upstream_writable() {}
  // Waited in the pool's queue longer than the cluster's queue_timeout.
  virtual void on_queue_timeout() = 0;
  // A HEAD request: its response has no body whatever the headers say.
  virtual bool is_head_request() const { return false; }

  // The pool's waiting queue (intrusive).
  UpstreamClient* queue_next = nullptr;
  UpstreamClient* queue_prev = nullptr;
  double queued_at = 0;
  bool queued = false;
};

} // namespace portico::upstream
