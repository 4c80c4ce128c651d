#pragma once
// One request on a shared h2c connection (Http2UpstreamConnection): HEADERS from the request's
// fields, the body through a deferred data provider, the response's DATA taken from the
// flow-control window only as the client takes it, so that a slow client holds back its own stream.
#include "core/byte_queue.h"
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

class Http2UpstreamStream final : public UpstreamStream {
public:
  // A request body above this waits for DATA frames before the client is read further.
  static constexpr size_t kBodyHigh = 64 * 1024;

  static void* operator new(size_t n) { return core::SmallAllocator::local().allocate(n); }
  static void operator delete(void* p) { core::SmallAllocator::local().deallocate(p); }

  Http2UpstreamStream(Http2UpstreamConnection& conn, UpstreamStreamListener* client,
                      bool head_request, bool first);
  ~Http2UpstreamStream();

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

private:
  friend class Http2UpstreamConnection;
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static ssize_t read_body(nghttp2_session* s, int32_t id, uint8_t* buf, size_t len,
                           uint32_t* flags, nghttp2_data_source* src, void* user);
  void on_timer();
  // Ends the client's part: no callback reaches it after. cancel: reset the stream too.
  void release_client(bool cancel);
  void touch();

  Http2UpstreamConnection& conn_;
  UpstreamStreamListener* client_;
  int32_t id_ = -1;
  http::Arena arena_;
  http::UpstreamResponseHead head_;
  core::ByteQueue body_; // request body not yet framed
  std::vector<http::Header> trailers_;
  ev_timer timer_;
  double last_activity_ = 0; // a request or response byte moved on this stream
  size_t unconsumed_ = 0;    // response DATA held back from the window while paused
  size_t header_bytes_ = 0;  // of the header block being received
  bool head_request_;
  bool first_;
  bool has_body_ = false;
  bool request_ended_ = false;
  bool request_sent_ = false; // framed whole: response_timeout runs from here
  bool body_deferred_ = false;
  bool head_delivered_ = false;
  bool response_seen_ = false;
  bool paused_ = false;
  bool failed_ = false; // refused before it reached nghttp2: reported from the loop

  core::ListHook<Http2UpstreamStream> hook_; // in the connection's list of live streams
};

} // namespace portico::upstream
