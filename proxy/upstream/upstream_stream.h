#pragma once
// One request's way to an upstream, whatever the protocol: an HTTP/1.1 connection it has to
// itself (Http1UpstreamConnection), or a stream of a shared h2c connection (Http2UpstreamStream).
// The request is given as the client sent it; each implementation translates it (request_writer.h).
#include "http/header.h"
#include "http/request_head.h"
#include "upstream/request_writer.h"

#include <span>
#include <string_view>

namespace portico::upstream {

// None of these calls back into the client before it returns: failures are reported later,
// from the loop.
class UpstreamStream {
public:
  // The request head, with the forwarding fields added; framing says how a body follows.
  virtual void send_head(const http::RequestHead& req, BodyFraming framing,
                         const ClientOrigin& client, const ForwardingOptions& fwd) = 0;
  // Request body bytes, in order (copied; the view need not outlive the call).
  virtual void send_body(std::string_view data) = 0;
  // The request is complete, with these trailers (for a chunked or HTTP/2 body). In a
  // tunnel, after the upgrade: the client sends no more (the write side is shut).
  virtual void end_request(std::span<const http::Header> trailers) = 0;
  // After a 101 to a TUNNEL request: a tunnel with no byte either way for this long closes.
  virtual void set_tunnel_timeout(double seconds) {}
  // Request bytes accepted but not yet written: the client is held back above a watermark.
  virtual size_t buffered() const = 0;
  // Stop or restart taking response bytes (the client cannot keep up).
  virtual void pause_reading() = 0;
  virtual void resume_reading() = 0;
  // The client is gone mid-exchange: no callback reaches it any more.
  virtual void detach() = 0;
  // This request opened the connection (so the connect time is its own); and how long that
  // took, 0 until it has.
  virtual bool first_on_connection() const = 0;
  virtual double connect_seconds() const = 0;

protected:
  ~UpstreamStream() = default;
};

} // namespace portico::upstream
