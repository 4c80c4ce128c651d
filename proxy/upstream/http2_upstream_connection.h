#pragma once
// One h2c connection to an upstream endpoint (prior knowledge), owned by its Http2ConnectionPool
// and shared by many requests, each on its own stream. Requests from many client connections go out
// together: one writev carries every HEADERS and DATA frame framed in a loop iteration, and one
// read brings many responses back, where HTTP/1.1 needs a connection and two system calls per
// request.
#include "core/block_pool.h"
#include "core/byte_queue.h"
#include "core/intrusive_list.h"
#include "core/small_allocator.h"
#include "http/arena.h"
#include "http/http1_response_parser.h"
#include "upstream/http2_upstream_stream.h"
#include "upstream/upstream_socket.h"
#include "upstream/upstream_stream_listener.h"

#include <ev.h>
#include <memory>
#include <nghttp2/nghttp2.h>
#include <vector>

namespace portico::upstream {

class UpstreamPool;
class Http2ConnectionPool;

class Http2UpstreamConnection final : public UpstreamSocket {
public:
  enum class State { CONNECTING, OPEN, DRAINING, CLOSED };

  Http2UpstreamConnection(Http2ConnectionPool& conns, int fd);
  ~Http2UpstreamConnection() override;
  Http2UpstreamConnection(const Http2UpstreamConnection&) = delete;
  Http2UpstreamConnection& operator=(const Http2UpstreamConnection&) = delete;

  State state() const { return state_; }
  // Room for one more stream: not draining, under the server's concurrency limit.
  bool can_take() const;
  // The server's SETTINGS have come: can_take's stream limit is the server's, not a guess.
  bool stream_limit_known() const { return limit_known_; }
  // A stream for client, handed to it with on_upstream_ready.
  void open_stream(UpstreamStreamListener* client);
  size_t streams() const { return streams_.size(); }
  double connect_seconds() const { return connect_seconds_; }
  void want_flush();
  // Fails every stream (with e) and closes the socket; the pool destroys the object later.
  void close(UpstreamError e);
  // No new streams; closes once the last one ends (GOAWAY sent now).
  void drain();

  // Pool bookkeeping.
  core::ListHook<Http2UpstreamConnection> pool_hook; // in the pool's list of h2c connections

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

  void run_deferred() override;
  void on_readable() override;
  void on_writable() override;
  void on_timer() override;
  // connect(2) finished, or the TLS handshake after it moved ([[cluster]] tls: ALPN h2).
  void advance();
  void on_established();
  void flush();
  // A write failed: no more output, the input is read to its end.
  void write_failed();
  void end_response(Http2UpstreamStream& st);
  void stream_gone(Http2UpstreamStream* st);
  void arm_idle();

  Http2ConnectionPool& conns_; // its siblings to the same endpoint
  State state_ = State::CONNECTING;
  nghttp2_session* session_ = nullptr;
  // timer_ (SocketConnection): the connect timeout, then idle retirement.
  core::Block* in_ = nullptr;
  core::ByteQueue out_;
  using Streams = core::IntrusiveList<Http2UpstreamStream, &Http2UpstreamStream::hook_>;
  Streams streams_;        // live streams
  uint32_t completed_ = 0; // streams that got a whole response
  double connect_started_ = 0;
  double connect_seconds_ = 0;
  bool limit_known_ = false;
  bool notify_writable_ = false;
  bool has_failed_streams_ = false;
  bool write_closed_ = false; // write_failed: the upstream reads no more
};

} // namespace portico::upstream
