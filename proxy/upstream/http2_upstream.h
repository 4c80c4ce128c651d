#pragma once
// One h2c connection to an upstream endpoint (prior knowledge), owned by its UpstreamPool and
// shared by many requests, each on its own stream. Requests from many client connections go
// out together: one writev carries every HEADERS and DATA frame framed in a loop iteration,
// and one read brings many responses back, where HTTP/1.1 needs a connection and two system
// calls per request.
#include "core/block_pool.h"
#include "core/byte_queue.h"
#include "core/deferred_queue.h"
#include "core/small_allocator.h"
#include "http/arena.h"
#include "http/http1_response_parser.h"
#include "upstream/upstream_client.h"
#include "upstream/upstream_stream.h"

#include <ev.h>
#include <nghttp2/nghttp2.h>
#include <vector>

namespace portico::upstream {

class UpstreamPool;
class Http2Upstream;

// One request on a shared h2c connection (http2_upstream_stream.cc).
class Http2UpstreamStream final : public UpstreamStream {
public:
  // A request body above this waits for DATA frames before the client is read further.
  static constexpr size_t kBodyHigh = 64 * 1024;

  static void* operator new(size_t n) { return core::SmallAllocator::local().allocate(n); }
  static void operator delete(void* p) { core::SmallAllocator::local().deallocate(p); }

  Http2UpstreamStream(Http2Upstream& conn, UpstreamClient* client, bool head_request, bool first);
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
  friend class Http2Upstream;
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static ssize_t read_body(nghttp2_session* s, int32_t id, uint8_t* buf, size_t len,
                           uint32_t* flags, nghttp2_data_source* src, void* user);
  void on_timer();
  // Ends the client's part: no callback reaches it after. cancel: reset the stream too.
  void release_client(bool cancel);
  void touch();

  Http2Upstream& conn_;
  UpstreamClient* client_;
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

  // The connection's list of live streams.
  Http2UpstreamStream* prev_ = nullptr;
  Http2UpstreamStream* next_ = nullptr;
};

class Http2Upstream final : public core::Deferred {
public:
  enum class State { CONNECTING, OPEN, DRAINING, CLOSED };

  Http2Upstream(UpstreamPool& pool, int fd);
  ~Http2Upstream() override;
  Http2Upstream(const Http2Upstream&) = delete;
  Http2Upstream& operator=(const Http2Upstream&) = delete;

  State state() const { return state_; }
  // Room for one more stream: not draining, under the server's concurrency limit.
  bool can_take() const;
  // A stream for client, handed to it with on_upstream_ready.
  void open_stream(UpstreamClient* client);
  size_t streams() const { return streams_; }
  double connect_seconds() const { return connect_seconds_; }
  void want_flush();
  // Fails every stream (with e) and closes the socket; the pool destroys the object later.
  void close(UpstreamError e);
  // No new streams; closes once the last one ends (GOAWAY sent now).
  void drain();

  // Pool bookkeeping.
  Http2Upstream* pool_next = nullptr;
  Http2Upstream* pool_prev = nullptr;

private:
  friend class Http2UpstreamStream;
  static const nghttp2_session_callbacks* callbacks();
  static int on_begin_headers(nghttp2_session* s, const nghttp2_frame* f, void* user);
  static int on_header(nghttp2_session* s, const nghttp2_frame* f, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                       void* user);
  static int on_frame_recv(nghttp2_session* s, const nghttp2_frame* f, void* user);
  static int on_data_chunk_recv(nghttp2_session* s, uint8_t flags, int32_t id, const uint8_t* data,
                                size_t len, void* user);
  static int on_stream_close(nghttp2_session* s, int32_t id, uint32_t error_code, void* user);
  static void read_cb(struct ev_loop* loop, ev_io* w, int revents);
  static void write_cb(struct ev_loop* loop, ev_io* w, int revents);
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);

  void run_deferred() override;
  void on_readable();
  void on_connected();
  void on_timer();
  void flush();
  void end_response(Http2UpstreamStream& st);
  void stream_gone(Http2UpstreamStream* st);
  void arm_idle();

  UpstreamPool& pool_;
  int fd_;
  State state_ = State::CONNECTING;
  nghttp2_session* session_ = nullptr;
  ev_io rev_, wev_;
  ev_timer timer_; // connect timeout, then idle retirement
  core::Block* in_ = nullptr;
  core::ByteQueue out_;
  Http2UpstreamStream* streams_head_ = nullptr;
  size_t streams_ = 0;
  uint32_t completed_ = 0; // streams that got a whole response
  double connect_started_ = 0;
  double connect_seconds_ = 0;
  bool notify_writable_ = false;
  bool has_failed_streams_ = false;
};

} // namespace portico::upstream
