#pragma once
// The contract of a filter: one piece of per-request behaviour on a route (a rewrite, a field
// edit, a redirect, a deadline, and later compression, caching, rate limits, auth), run by the
// exchange's FilterChain (filter_chain.h) in the order filters/registry.cc lists them.
//
// A request passes the filters in that order, its response in the reverse order, each event
// in turn: the head, body chunks, then the end (trailers, or an empty chunk with end = true).
// Every step returns CONTINUE, to hand the event (maybe changed) to the next filter, or STOP:
//  - on a head: the filter holds it, and everything after it on that side waits in the chain
//    (bounded: above the exchange's high watermark the producer is paused, the client's reads
//    or the upstream's) until the filter calls continue_request() / continue_response(),
//    later, from its own callback (a timer, a reply it waited for) on the same loop;
//  - on a body chunk or trailers: the filter has taken them; it hands on what it wants, when
//    it wants, with pass_request_body() and the like, and reports what it holds meanwhile in
//    request_buffered() / response_buffered(), which count towards the same watermarks.
// Instead of passing, a filter may answer (respond(): the reply goes back through the response
// side of the filters before it, never reaching the upstream) or fail the exchange (fail(): a
// local reply with that status before the response began, a reset after).
//
// Views handed to a filter (the chunk, trailers, fields) are valid during the call only; what a
// filter puts in their place must live until the call returns (its own members, or the
// exchange's arena for anything held longer). Filters never see each other, and the exchange
// knows none of them by name. A filter lives from its request's head to the exchange's close.
#include "core/small_allocator.h"
#include "http/header.h"
#include "http/request_head.h"
#include "server/exchange.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace portico::routing {

class FilterChain;

enum class FilterStatus : uint8_t {
  CONTINUE, // hand the event on
  STOP,     // held (a head) or taken (body, trailers): see above
};

// Who made a response head.
enum class ResponseSource : uint8_t {
  UPSTREAM, // relayed from the upstream
  LOCAL,    // the proxy's own answer: a filter's, the router's (404), or an error (502, 504)
};

// A response head on its way to the client; filters may change any of it. content_length -1:
// the body is streamed (a filter that changes the body's length sets it so).
struct FilterResponseHead {
  int status = 200;
  int64_t content_length = -1;
  std::vector<http::Header>* fields = nullptr; // header fields, lower-case names
  ResponseSource source = ResponseSource::UPSTREAM;
  bool tunnel = false; // the 101 (or HTTP/2 200) that opens a WebSocket tunnel
  // The upstream's Date field, for filters to read (the client is sent the proxy's own, as
  // nginx does, unless date is set); empty for a local reply or when it sent none.
  std::string_view upstream_date;
  std::string_view date; // the Date the client is sent; empty: now
};

// An answer the proxy makes itself, before it becomes a head and a body: each filter on the
// response side may reshape it in on_local_reply first (gRPC turns it into a trailers-only
// answer), the filter that made it as well. Its views must live until the reply has left the
// chain.
struct LocalReply {
  int status = 200;
  std::string_view content_type = "text/plain";
  std::string_view body;
  std::span<const http::Header> fields; // more fields (location, grpc-status)
};

// What a route's filters tell its exchange: how the request goes upstream (retry overrides),
// and what its access log line says of them; and what the exchange tells them first.
struct ExchangeOptions {
  int8_t retry_on_reset = -1;       // -1: the cluster's; 0 off; 1 on
  int8_t retry_non_idempotent = -1; // likewise
  std::string_view cache_status;    // the cache's Cache-Status value (in the exchange's arena)
  std::string_view limit;           // the limit that refused or delayed it, and how ("api 429")
  // The client as trusted proxies vouch for it (routing/real_client.h), set before any filter
  // runs.
  std::string_view client;
};

class Filter {
public:
  virtual ~Filter() = default;

  // The request side, in route order. The head is the exchange's own: edits stay (new views
  // in exchange().arena()).
  virtual FilterStatus on_request_head(http::RequestHead& req) { return FilterStatus::CONTINUE; }
  virtual FilterStatus on_request_body(std::string_view& data, bool end) {
    return FilterStatus::CONTINUE;
  }
  virtual FilterStatus on_request_trailers(std::span<const http::Header>& trailers) {
    return FilterStatus::CONTINUE;
  }
  // The response side, in reverse route order.
  virtual void on_local_reply(LocalReply& reply) {}
  virtual FilterStatus on_response_head(FilterResponseHead& head) { return FilterStatus::CONTINUE; }
  virtual FilterStatus on_response_body(std::string_view& data, bool end) {
    return FilterStatus::CONTINUE;
  }
  virtual FilterStatus on_response_trailers(std::span<const http::Header>& trailers) {
    return FilterStatus::CONTINUE;
  }
  // This filter changes the response body as it passes (compression): bytes must reach it, so
  // a response below it cannot hand a file to the kernel (send_response_file).
  virtual bool reads_response_body() const { return false; }
  // The client went while the upstream's response came, and this filter wants the rest of it
  // still (a cache storing it, so that the requests waiting on it get it whole: nginx reads a
  // cacheable response to its end likewise). It and the filters above it then see the rest,
  // which goes no further, and exchange() is gone (FilterChain::keep_response); the filters
  // below it hear on_exchange_close at once.
  virtual bool keeps_response() const { return false; }
  // A response this filter makes itself (respond_head) may go on: the client and the filters
  // after it have taken what they held down below the low watermark.
  virtual void on_response_writable() {}
  // Body bytes this filter has taken and not yet passed on.
  virtual size_t request_buffered() const { return 0; }
  virtual size_t response_buffered() const { return 0; }
  // The exchange is over (completed, answered, aborted, the client gone): stop timers and
  // calls of its own. No step is called after this; the filter is deleted later, after the
  // loop's callbacks have returned.
  virtual void on_exchange_close() {}

  // One per request: from the worker's free lists, not malloc.
  static void* operator new(size_t n) { return core::SmallAllocator::local().allocate(n); }
  static void operator delete(void* p) { core::SmallAllocator::local().deallocate(p); }

protected:
  // The client's exchange: its request, arena, loop, addresses and listener.
  server::Exchange& exchange() const;
  ExchangeOptions& exchange_options() const;
  // Resume the side this filter holds (only from outside its own step: inside, return CONTINUE).
  void continue_request();
  void continue_response();
  // Hand on bytes or trailers this filter took (end: nothing follows).
  void pass_request_body(std::string_view data, bool end);
  void pass_request_trailers(std::span<const http::Header> trailers);
  void pass_response_body(std::string_view data, bool end);
  void pass_response_trailers(std::span<const http::Header> trailers);
  // Answer the request here; from a step, return STOP after it.
  void respond(const LocalReply& reply);
  // Answer it with a body of this filter's own making: the head now, then the body through
  // pass_response_body (or send_response_file) while !response_blocked(), resuming from
  // on_response_writable. From a step, return STOP after it.
  void respond_head(FilterResponseHead& head);
  bool response_blocked() const;
  // From on_response_head: this filter answers in place of that response, with the head as
  // it leaves the step (edited in place, CONTINUE) and a body of its own made as after
  // respond_head, starting from on_response_writable once the head has passed. The response's
  // own body and trailers go no further than here (an upstream's is still read to its end, so
  // its connection is kept). A cache answers a 304 or a 503 with what it stored this way.
  void replace_response();
  // The rest of such a body is length bytes of fd from offset, sent by the kernel (sendfile)
  // when nothing between here and the socket reads them; it takes fd. False, fd untouched:
  // the bytes must pass through (read them into pass_response_body).
  bool send_response_file(int fd, int64_t offset, int64_t length);
  // A local reply with status, or a reset once the response has begun; why goes to the error
  // log, with the request.
  void fail(int status, const char* why = "failed by a filter");

private:
  friend class FilterChain;
  FilterChain* chain_ = nullptr;
  uint8_t index_ = 0;
};

// What the admin endpoint asks of a worker's caches: drop the stored responses of one URL, or
// of every URL that begins with it.
struct PurgeRequest {
  std::string scheme, authority, target;
  bool prefix = false;
};

// Makes a route's filter for each request; one per route and filter, made with the worker's
// router, used on its loop only.
class FilterFactory {
public:
  // On the worker's loop: drops what this factory stores for r (a cache's); how many URLs.
  virtual size_t purge(const PurgeRequest& r) { return 0; }
  // On the worker's thread, before its first request (at its start, or when a reload makes
  // the router): what the factory sets up on the loop (a cache reading its directory back).
  virtual void start(struct ev_loop* loop) {}
  virtual ~FilterFactory() = default;
  // A filter for this request, or null when it has nothing to do for it (the gRPC filter for a
  // request that is not a gRPC call).
  virtual Filter* create(const server::Exchange& ex) const = 0;
  // It makes filters for HTTP/2 requests only (gRPC): an HTTP/1 request on a route with no
  // other filter is then not offered to it at all.
  virtual bool http2_only() const { return false; }
};

} // namespace portico::routing
