#pragma once
// What an upstream connection reports to the request it carries (ProxiedExchange), and how a
// request waits in a pool's queue. ("Client" is the user's side; this is the request as the
// upstream side sees it.) Callbacks may arrive inside the connection's own libev callbacks;
// after on_upstream_end or on_upstream_error the connection or stream is no longer the
// listener's (it may be carrying the next request already) and must not be touched. Nothing
// is destroyed inside a callback: objects are disposed of through the loop's DeferredQueue.
#include "core/intrusive_list.h"
#include "upstream/upstream_error.h"

#include <string_view>

namespace portico::http {
struct UpstreamResponseHead;
}

namespace portico::upstream {

class UpstreamStream;

class UpstreamStreamListener {
public:
  virtual ~UpstreamStreamListener() = default;
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
  core::ListHook<UpstreamStreamListener> queue_hook;
  double queued_at = 0;
  bool queued = false;
};

} // namespace portico::upstream
