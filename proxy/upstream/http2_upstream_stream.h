#pragma once
// One request on a shared h2c connection (Http2UpstreamConnection): HEADERS from the request's
// fields, the body through a deferred data provider, the response's DATA taken from the
// flow-control window only as the client takes it, so that a slow client holds back its own stream.
#include "core/byte_queue.h"
#include "core/deferred_queue.h"
#include "core/intrusive_list.h"
#include "core/small_allocator.h"
#include "http/arena.h"
#include "http/http1_response_parser.h"
#include "upstream/upstream_stream.h"
#include "upstream/upstream_stream_listener.h"

#include <ev.h>
#include <nghttp2/nghttp2.h>
#include <vector>

namespace portico::upstream {

class Http2UpstreamConnection;

class Http2UpstreamStream final : public core::Disposable,
                                  public UpstreamStream,
                                  public core::SmallAllocated<Http2UpstreamStream> {
public:
  // A request body above this waits for DATA frames before the client is read further.
  static constexpr size_t kBodyHigh = 64 * 1024;

  // How far the request has gone up. Forward only: set_request() refuses anything else.
  enum class Request : uint8_t {
    UNSENT,     // created; its HEADERS not submitted yet
    REFUSED,    // nghttp2 took no more streams (the session is going away): the listener
                // hears of it from the loop, as a refusal it may retry
    BODY,       // HEADERS submitted; body bytes still come from the client
    BODY_ENDED, // the client's body is complete; not all of it framed yet
    SENT,       // framed whole (END_STREAM, or trailers queued): response_timeout runs
  };
  // How much of the response has come back. Forward only, like Request.
  enum class Response : uint8_t {
    NONE, // not one byte: a failure now may be retried (Delivery::UNANSWERED)
    HEAD, // a header block arriving (an interim 1xx, or the final head)
    BODY, // the final head went to the listener; DATA and trailers follow
  };

  Http2UpstreamStream(Http2UpstreamConnection& conn, UpstreamStreamListener* client,
                      bool head_request, bool first);
  ~Http2UpstreamStream() override;

  void send_head(const http::RequestHead& req, BodyFraming framing, const ClientOrigin& client,
                 const ForwardingOptions& fwd) override;
  void send_body(std::string_view data) override;
  void end_request(std::span<const http::Header> trailers) override;
  size_t buffered() const override { return body_.size(); }
  void pause_reading() override { paused_ = true; }
  void resume_reading() override;
  void detach() override;
  bool first_on_connection() const override { return first_; }
  double connect_seconds() const override;

  Request request_state() const { return request_; }
  Response response_state() const { return response_; }

private:
  friend class Http2UpstreamConnection;
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static ssize_t read_body(nghttp2_session* s, int32_t id, uint8_t* buf, size_t len,
                           uint32_t* flags, nghttp2_data_source* src, void* user);
  void on_timer();
  void set_request(Request next);
  void set_response(Response next);
  // A response byte arrived: at least HEAD.
  void saw_response() {
    if (response_ == Response::NONE)
      set_response(Response::HEAD);
  }
  // The request still has body bytes to send that no one needs once the response is whole.
  bool body_unfinished() const {
    return request_ == Request::BODY || (request_ == Request::BODY_ENDED && !body_.empty());
  }
  // Ends the client's part: no callback reaches it after. cancel: reset the stream too.
  void release_client(bool cancel);
  void touch();

  Http2UpstreamConnection& conn_;
  UpstreamStreamListener* client_;
  int32_t id_ = -1;
  http::InlineArena<> arena_;
  http::UpstreamResponseHead head_;
  core::ByteQueue body_; // request body not yet framed
  std::vector<http::Header> trailers_;
  ev_timer timer_;
  double last_activity_ = 0; // a request or response byte moved on this stream
  size_t unconsumed_ = 0;    // response DATA held back from the window while paused
  size_t header_bytes_ = 0;  // of the header block being received
  Request request_ = Request::UNSENT;
  Response response_ = Response::NONE;
  bool head_request_; // the response has no body whatever its head says
  bool first_;        // the connection's first stream: its connect time is this request's
  // Not states but conditions across them: nghttp2 waits for body bytes (the data provider
  // said DEFERRED); the listener cannot take response bytes now.
  bool body_deferred_ = false;
  bool paused_ = false;

  core::ListHook<Http2UpstreamStream> hook_; // in the connection's list of live streams
};

const char* to_string(Http2UpstreamStream::Request r);
const char* to_string(Http2UpstreamStream::Response r);

} // namespace portico::upstream
