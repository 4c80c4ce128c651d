// One client QUIC connection (ngtcp2, the handshake on GnuTLS) over a connected UDP socket,
// speaking HTTP/3 through nghttp3, or, in raw mode, writing the caller's bytes on streams it
// opens itself: the frame-level tests need to send what nghttp3 would never write.
#pragma once

#include <ev.h>
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace h3load {

struct Target {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::string sni = "localhost";
  std::string authority;
  double handshake_timeout = 10;
};

// What a raw-mode connection writes once its handshake is done.
struct RawStream {
  bool bidi = true;
  bool fin = true;
  std::string bytes;
  // Not a stream: once every stream before it is answered, the client moves to a new local
  // port (a connection migration, as after a NAT rebinding), and the streams after it go
  // from there.
  bool migrate = false;
};

struct RequestSpec {
  std::string method = "GET";
  std::string path = "/";
  size_t body = 0;
};

class QuicClient;

// What a connection tells the program driving it.
struct ClientEvents {
  virtual ~ClientEvents() = default;
  virtual void ready(QuicClient&) {}
  // An HTTP/3 request ended: its status (0 if none came), the body bytes received, and the
  // application error code it was reset with (0 if it was not).
  virtual void response(QuicClient&, int status, uint64_t bytes, uint64_t reset_code,
                        double seconds) {}
  virtual void closed(QuicClient&) {}
};

class QuicClient {
public:
  QuicClient(struct ev_loop* loop, const Target& target, ClientEvents& events, bool raw);
  ~QuicClient();
  QuicClient(const QuicClient&) = delete;
  QuicClient& operator=(const QuicClient&) = delete;

  bool start(std::string* error);
  // Requests to keep in flight (HTTP/3 mode): the client opens streams up to this many as the
  // server's stream limit allows, asking want_request() before each.
  void set_concurrency(size_t n) { concurrency_ = n; }
  void set_request(const RequestSpec& r) { request_ = r; }
  void raw_send(std::vector<RawStream> streams) { raw_pending_ = std::move(streams); }
  // Only the first flight: the client sends its Initial and then ignores every answer, counting
  // the bytes (the server's amplification limit is what the test reads).
  void set_silent_after_first_flight() { silent_ = true; }
  void close();

  bool is_closed() const { return closed_; }
  bool handshake_done() const { return handshake_done_; }
  const std::string& close_reason() const { return close_reason_; }
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }
  const ngtcp2_transport_params* remote_params() const;
  size_t in_flight() const { return in_flight_; }

  // Raw mode: what came back on each bidirectional stream the client opened.
  struct RawResult {
    std::string data;
    bool fin = false;
    bool reset = false;
    uint64_t reset_code = 0;
    bool stop_sending = false;
    uint64_t stop_code = 0;
  };
  const std::unordered_map<int64_t, RawResult>& raw_results() const { return raw_results_; }
  bool raw_streams_finished() const;
  // The local port the connection uses now (it changes when it migrates).
  uint16_t local_port() const;
  int migrations() const { return migrations_; }

  std::function<bool()> want_request = [] { return false; };

private:
  struct Stream {
    double started = 0;
    int status = 0;
    uint64_t bytes = 0;
    uint64_t reset_code = 0;
    size_t body_left = 0;
    // Raw mode: the bytes to write and how far they are written.
    std::string raw;
    size_t raw_off = 0;
    bool raw_fin = false;
  };

  bool setup_h3();
  // The stream's bytes (and the connection's) were taken: the peer may send as many more.
  void credit(int64_t id, uint64_t n);
  RawResult* raw_result(int64_t id);
  bool open_socket(std::string* error);
  bool migrate();
  void open_streams();
  void on_readable();
  void write();
  bool write_raw_stream(int64_t id, Stream& s, ngtcp2_path_storage& ps, uint8_t* buf, size_t len,
                        ngtcp2_tstamp ts);
  void send_packet(const uint8_t* data, size_t len);
  void arm_timer();
  void on_timer();
  void fail(const std::string& why, uint64_t app_error);
  // Sends a CONNECTION_CLOSE with e, then ends the connection here.
  void close_with(const ngtcp2_connection_close_error& e, const std::string& why);
  void finish(const std::string& why);
  void note_peer_close();

  static void read_cb(struct ev_loop*, ev_io*, int);
  static void timer_cb(struct ev_loop*, ev_timer*, int);
  static ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref*);
  static QuicClient* self(void* p) { return static_cast<QuicClient*>(p); }
  // ngtcp2's callbacks.
  static int on_handshake_completed(ngtcp2_conn*, void*);
  static int on_recv_stream_data(ngtcp2_conn*, uint32_t, int64_t, uint64_t, const uint8_t*, size_t,
                                 void*, void*);
  static int on_acked(ngtcp2_conn*, int64_t, uint64_t, uint64_t, void*, void*);
  static int on_stream_close(ngtcp2_conn*, uint32_t, int64_t, uint64_t, void*, void*);
  static int on_stream_reset(ngtcp2_conn*, int64_t, uint64_t, uint64_t, void*, void*);
  static int on_stop_sending(ngtcp2_conn*, int64_t, uint64_t, void*, void*);
  static int on_extend_streams(ngtcp2_conn*, uint64_t, void*);
  static int on_extend_stream_data(ngtcp2_conn*, int64_t, uint64_t, void*, void*);
  static void on_rand(uint8_t*, size_t, const ngtcp2_rand_ctx*);
  static int on_new_cid(ngtcp2_conn*, ngtcp2_cid*, uint8_t*, size_t, void*);
  // nghttp3's callbacks.
  static int h3_stream_close(nghttp3_conn*, int64_t, uint64_t, void*, void*);
  static int h3_recv_data(nghttp3_conn*, int64_t, const uint8_t*, size_t, void*, void*);
  static int h3_deferred_consume(nghttp3_conn*, int64_t, size_t, void*, void*);
  static int h3_recv_header(nghttp3_conn*, int64_t, int32_t, nghttp3_rcbuf*, nghttp3_rcbuf*,
                            uint8_t, void*, void*);
  static int h3_stop_sending(nghttp3_conn*, int64_t, uint64_t, void*, void*);
  static int h3_reset_stream(nghttp3_conn*, int64_t, uint64_t, void*, void*);
  static nghttp3_ssize h3_read_body(nghttp3_conn*, int64_t, nghttp3_vec*, size_t, uint32_t*, void*,
                                    void*);

  struct ev_loop* loop_;
  Target target_;
  ClientEvents& events_;
  bool raw_;
  bool silent_ = false;
  int fd_ = -1;
  sockaddr_storage local_{};
  socklen_t local_len_ = 0;
  ev_io read_watcher_;
  ev_timer timer_;
  ngtcp2_conn* conn_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  gnutls_certificate_credentials_t cred_ = nullptr;
  ngtcp2_crypto_conn_ref ref_{};
  nghttp3_conn* h3_ = nullptr;
  bool handshake_done_ = false;
  int migrations_ = 0;
  bool closed_ = false;
  std::string close_reason_;
  uint64_t app_error_ = 0;
  size_t concurrency_ = 0;
  size_t in_flight_ = 0;
  RequestSpec request_;
  std::vector<RawStream> raw_pending_;
  std::unordered_map<int64_t, Stream> streams_;
  std::unordered_map<int64_t, RawResult> raw_results_;
  uint64_t bytes_sent_ = 0;
  uint64_t bytes_received_ = 0;
};

} // namespace h3load
