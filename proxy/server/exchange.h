#pragma once
// One request/response pair as the handler sees it, whatever the protocol underneath: the
// sessions (Http1ServerSession, Http2ServerSession) implement the response side, the handler
// (backend apps, later the proxy's router) drives it.
#include "http/arena.h"
#include "http/request_head.h"
#include "http/response_head.h"

#include <cstdint>
#include <ev.h>
#include <span>
#include <sys/socket.h>

namespace portico::server {

class RequestHandler;

class Exchange;

// Follows one exchange after the handler has seen its head. Every method has a default that
// ignores the event, so a handler that answers at once (hello) needs none of them.
class ExchangeListener {
public:
  virtual ~ExchangeListener() = default;
  // Request body bytes; the view is valid only during the call.
  virtual void on_request_body(Exchange& ex, std::string_view data) {}
  // Trailer fields after the request body (HTTP/1.1 chunked trailers, HTTP/2 trailing HEADERS),
  // just before on_request_end. The views are valid only during the call.
  virtual void on_request_trailers(Exchange& ex, std::span<const http::Header> trailers) {}
  // The request body is complete (called at once for requests without one).
  virtual void on_request_end(Exchange& ex) {}
  // The response buffer fell below the low watermark after being above the high one.
  virtual void on_response_writable(Exchange& ex) {}
  // The exchange is over, completed or aborted (client gone, stream reset). The exchange must
  // not be touched after this returns; a listener that owns itself deletes itself here.
  virtual void on_exchange_close(Exchange& ex) {}
  // A graceful stop's drain window for long-lived exchanges is over: a WebSocket tunnel says
  // goodbye (a close frame each way) and returns true; anything else returns false.
  virtual bool on_goodbye(Exchange& ex) { return false; }
};

class Exchange {
public:
  // Above this many buffered response bytes a producer should wait for on_response_writable.
  static constexpr size_t kHighWatermark = 256 * 1024;
  static constexpr size_t kLowWatermark = 64 * 1024;

  virtual ~Exchange() = default;

  const http::RequestHead& request() const { return request_; }
  // For a handler that rewrites the request before passing it on (a route's prefix_rewrite,
  // its fields): new views must live as long as the exchange (its arena, or the handler's).
  http::RequestHead& mutable_request() { return request_; }
  http::Arena& arena() { return arena_; }
  struct ev_loop* loop() const {
    return loop_;
  }
  void set_listener(ExchangeListener* l) { listener_ = l; }
  ExchangeListener* listener() const { return listener_; }

  // Sends the status and headers. content_length -1 streams the body (chunked on HTTP/1.1).
  virtual void send_head(const http::ResponseHead& head) = 0;
  // Queues body bytes (copied once into the connection's or stream's buffer).
  virtual void send_body(std::string_view data) = 0;
  // Queues length bytes of file fd from offset as body, sent by the kernel (sendfile(2)), and
  // takes fd. False, fd untouched, where the bytes must pass through the process: TLS, HTTP/2,
  // a chunked or tunnelled response.
  virtual bool send_file(int fd, int64_t offset, int64_t length) { return false; }
  // Ends the response; the exchange closes once the request side is also done.
  virtual void end_response() = 0;
  // Ends the response with trailer fields: a trailer section after the last chunk on HTTP/1.1,
  // a trailing HEADERS frame on HTTP/2. Where the framing has no place for them (a response
  // with Content-Length on HTTP/1.1) they are dropped, as RFC 9110 6.5.1 allows.
  virtual void end_response_with_trailers(std::span<const http::Header> trailers) {
    end_response();
  }
  // Opens a tunnel (WebSocket): sends head, 101 with its upgrade fields on HTTP/1.1, a 2xx on
  // HTTP/2 (RFC 8441). From then on the request body is the client's bytes, raw, until
  // on_request_end (the client's end of sending; on HTTP/1.1 a second one, after the
  // handshake request's own), send_body's bytes go back raw, and end_response ends ours.
  virtual void start_tunnel(const http::ResponseHead& head) { send_head(head); }
  // Response bytes queued and not yet handed to the socket.
  virtual size_t buffered() const = 0;
  // Stops reading this request's body (backpressure) until resume_request_body().
  virtual void pause_request_body() = 0;
  virtual void resume_request_body() = 0;
  // Aborts: HTTP/1 closes the connection, HTTP/2 resets the stream.
  virtual void abort() = 0;

  // The client's address as text ("192.0.2.1", "2001:db8::1", "unix"), for X-Forwarded-For.
  std::string_view client_address() const { return client_address_; }
  // The client connection is TLS (set by the session; :scheme is the client's claim).
  bool over_tls() const { return over_tls_; }
  // Which configured listener accepted the connection.
  uint16_t listener_index() const { return listener_index_; }
  // The proxy made it itself (a forward auth's request): it may use `internal` routes.
  bool internal() const { return internal_; }
  // A mirrored copy (mirror_exchange.h): the index of the shadow cluster it goes to straight,
  // without routing; -1 for every other request.
  int32_t shadow_cluster() const { return shadow_cluster_; }
  // The client's and the proxy's ends of the connection (a PROXY protocol header's, when the
  // listener takes one); AF_UNSPEC where unknown.
  virtual void socket_addresses(sockaddr_storage& peer, sockaddr_storage& local) const {
    peer.ss_family = local.ss_family = AF_UNSPEC;
  }

  bool head_sent() const { return head_sent_; }
  // The status of the response head sent, 0 before one is.
  int response_status() const { return response_status_; }
  bool response_ended() const { return response_ended_; }
  bool request_ended() const { return request_ended_; }
  bool above_high_watermark() const { return buffered() > kHighWatermark; }
  // Response body bytes taken for the client (a local reply's as an upstream's), for the
  // access log: what was sent, not what the upstream gave.
  uint64_t body_bytes_sent() const { return body_bytes_sent_; }

  // A whole small response in one call; more: fields besides Content-Type.
  void respond(int status, std::string_view content_type, std::string_view body,
               std::span<const http::Header> more = {});
  // The handler the request was given to (the worker's router), for a request the proxy
  // makes of itself (detached_exchange.h); null where none is known.
  RequestHandler* handler() const { return handler_; }

protected:
  // The request becomes a copy of head, its strings in this exchange's arena (one the proxy
  // makes itself: detached_exchange.h, subrequest.h).
  void copy_request(const http::RequestHead& head);

  http::RequestHead request_;
  http::InlineArena<> arena_;
  struct ev_loop* loop_ = nullptr;
  ExchangeListener* listener_ = nullptr;
  RequestHandler* handler_ = nullptr;
  std::string_view client_address_;
  bool over_tls_ = false;
  bool internal_ = false;
  uint16_t listener_index_ = 0;
  int32_t shadow_cluster_ = -1;
  bool head_sent_ = false;
  uint64_t body_bytes_sent_ = 0;
  int response_status_ = 0;
  bool response_ended_ = false;
  bool request_ended_ = false;
};

// What a server does with requests: the backend's app table, the proxy's router.
class RequestHandler {
public:
  virtual ~RequestHandler() = default;
  // The request head is complete. The handler answers now or sets a listener to follow the body
  // and the response's progress.
  virtual void on_request(Exchange& ex) = 0;
  // The session refused the request before on_request, for its head or framing (400, 413,
  // 414, 431, ...), and has answered it with status: the handler may count and log it as it
  // does every exchange. ex holds what was parsed of the head.
  virtual void on_refused(const Exchange& ex, int status) {}
};

} // namespace portico::server
