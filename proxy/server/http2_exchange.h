#pragma once
// One HTTP/2 request stream as an Exchange. The response body waits in the stream's own queue
// until nghttp2 schedules a DATA frame for it, so a slow stream never holds up the others.
// Streams are recycled through a per-thread free list, arena blocks and all.
#include "core/intrusive_list.h"
#include "http/h2_request_rules.h"
#include "server/exchange.h"
#include "server/stream_body.h"

#include <cstdint>
#include <vector>

namespace portico::server {

class Http2ServerSession;

class Http2Exchange final : public Exchange {
public:
  static Http2Exchange* acquire(Http2ServerSession& s, int32_t id);
  static void release(Http2Exchange* st);

  void send_head(const http::ResponseHead& head) override;
  void send_body(std::string_view data) override;
  void end_response() override;
  void end_response_with_trailers(std::span<const http::Header> trailers) override;
  size_t buffered() const override { return body_.size(); }
  void socket_addresses(sockaddr_storage& peer, sockaddr_storage& local) const override;
  void pause_request_body() override;
  void resume_request_body() override;
  void abort() override;

  int32_t id() const { return id_; }
  Http2ServerSession& session() const { return *session_; }

  // Where the stream's request stands (its response has head_sent() and response_ended()).
  enum class Phase : uint8_t {
    HEAD,       // its header block is coming in
    TOO_LARGE,  // the header block went over max_header_bytes: the rest of it is dropped, and
                // the stream is answered 431 once it is complete, never handed to the handler
    DISPATCHED, // the handler has the head; body and trailers go to its listener
  };
  Phase phase() const { return phase_; }

private:
  friend class Http2ServerSession;
  Http2Exchange() = default;
  // HEAD -> TOO_LARGE or DISPATCHED.
  void set_phase(Phase next);

  Http2ServerSession* session_ = nullptr;
  core::ListHook<Http2Exchange> hook_; // in the session's list of open streams
  int32_t id_ = 0;
  StreamBody body_{arena_};                     // response DATA not yet framed
  std::vector<http::Header> request_trailers_;  // in the arena, until the request ends
  std::vector<http::Header> response_trailers_; // in the arena, until the last DATA is framed
  size_t header_bytes_ = 0;                     // request header section size, for the limit
  size_t unconsumed_ = 0;            // request DATA held back from WINDOW_UPDATE while paused
  ev_tstamp send_waiting_since_ = 0; // response bytes queued, and none framed since
  int64_t body_received_ = 0;        // request DATA so far, for max_body_bytes
  http::H2RequestRules rules_;       // whether the request is well-formed, field by field
  Phase phase_ = Phase::HEAD;
  bool malformed_ = false; // reset with PROTOCOL_ERROR: nothing more of the request is taken
  // Conditions of the body flow rather than steps of the stream's life.
  bool paused_ = false;
  bool deferred_ = false;        // nghttp2 waits for body bytes (NGHTTP2_ERR_DEFERRED)
  bool has_provider_ = false;    // the response was submitted with a body
  bool writable_wanted_ = false; // went above the high watermark; tell the listener when low
};

const char* to_string(Http2Exchange::Phase p);

} // namespace portico::server
