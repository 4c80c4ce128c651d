#pragma once
// The HTTP/3 side of a QUIC connection (nghttp3): request streams in, exchanges for the
// handler, responses out. QuicConnection moves the bytes; this turns them into exchanges.
#include "quic/http3_exchange.h"

#include <cstdint>
#include <nghttp3/nghttp3.h>
#include <unordered_map>

namespace portico::server {
class ServerContext;
}

namespace portico::quic {

class QuicConnection;

class Http3Session {
public:
  Http3Session(QuicConnection& conn, server::ServerContext& ctx, size_t max_streams);
  ~Http3Session();
  Http3Session(const Http3Session&) = delete;
  Http3Session& operator=(const Http3Session&) = delete;

  // Opens the control and QPACK streams (the handshake is done). False: the connection closes.
  bool start();
  // Stream bytes from the client. Returns the bytes to credit to flow control now, or a
  // negative nghttp3 error (the connection closes with its HTTP/3 code).
  int64_t on_stream_data(int64_t id, const uint8_t* data, size_t len, bool fin);
  // Frames to send: what nghttp3_conn_writev_stream gives, and what was taken of it.
  int64_t next_output(int64_t* id, int* fin, nghttp3_vec* vec, size_t n);
  int wrote(int64_t id, size_t n);
  void blocked(int64_t id);
  void unblocked(int64_t id);
  void write_shut(int64_t id);
  int acked(int64_t id, uint64_t n);
  // QUIC closed the stream, or the client reset its sending side (RESET_STREAM) or asked us to
  // stop sending (STOP_SENDING).
  int stream_closed(int64_t id, uint64_t app_error);
  int read_reset(int64_t id);
  int write_stopped(int64_t id);
  void max_client_streams(uint64_t n);
  // A graceful stop: GOAWAY, then every stream that is under way finishes.
  void drain();
  // No request stream open.
  bool idle() const { return streams_.empty(); }
  // The connection is going away: every exchange is aborted.
  void abort_all();

  QuicConnection& connection() { return conn_; }
  server::ServerContext& context() { return ctx_; }

  // For Http3Exchange.
  void submit_response(Http3Exchange& st, const http::ResponseHead& head);
  void resume(Http3Exchange& st);
  void consume(Http3Exchange& st, size_t n);
  void reset(Http3Exchange& st, uint64_t app_error);
  void submit_trailers(Http3Exchange& st, const nghttp3_nv* nv, size_t n);

private:
  static Http3Session* self(void* p) { return static_cast<Http3Session*>(p); }
  static Http3Exchange* exchange_of(void* stream_user_data) {
    return static_cast<Http3Exchange*>(stream_user_data);
  }
  void dispatch(Http3Exchange& st);
  void request_ended(Http3Exchange& st);
  void finish(Http3Exchange* st);

  static int on_acked(nghttp3_conn*, int64_t id, uint64_t n, void*, void* sud);
  static int on_stream_close(nghttp3_conn*, int64_t id, uint64_t err, void*, void* sud);
  static int on_recv_data(nghttp3_conn*, int64_t id, const uint8_t* data, size_t len, void*,
                          void* sud);
  static int on_deferred_consume(nghttp3_conn*, int64_t id, size_t n, void*, void* sud);
  static int on_begin_headers(nghttp3_conn*, int64_t id, void*, void* sud);
  static int on_header(nghttp3_conn*, int64_t id, int32_t token, nghttp3_rcbuf* name,
                       nghttp3_rcbuf* value, uint8_t flags, void*, void* sud);
  static int on_end_headers(nghttp3_conn*, int64_t id, int fin, void*, void* sud);
  static int on_trailer(nghttp3_conn*, int64_t id, int32_t token, nghttp3_rcbuf* name,
                        nghttp3_rcbuf* value, uint8_t flags, void*, void* sud);
  static int on_stop_sending(nghttp3_conn*, int64_t id, uint64_t err, void*, void* sud);
  static int on_end_stream(nghttp3_conn*, int64_t id, void*, void* sud);
  static int on_reset_stream(nghttp3_conn*, int64_t id, uint64_t err, void*, void* sud);
  static nghttp3_ssize read_data(nghttp3_conn*, int64_t id, nghttp3_vec* vec, size_t veccnt,
                                 uint32_t* pflags, void*, void* sud);

  QuicConnection& conn_;
  server::ServerContext& ctx_;
  nghttp3_conn* h3_ = nullptr;
  std::unordered_map<int64_t, Http3Exchange*> streams_;
};

} // namespace portico::quic
