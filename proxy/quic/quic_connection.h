#pragma once
// One QUIC connection (ngtcp2): its packets in and out, its TLS handshake (GnuTLS, through
// ngtcp2's crypto helpers), its timer, its connection IDs, and the HTTP/3 session on top.
// It flushes once per loop pass (a Deferred) however many packets and exchanges asked to.
#include "core/deferred_queue.h"
#include "quic/http3_session.h"

#include <ev.h>
#include <gnutls/gnutls.h>
#include <memory>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <string>
#include <sys/socket.h>
#include <vector>

namespace portico::quic {

class QuicEndpoint;
class QuicTlsContext;

// A datagram's addresses: the client's, and ours it was sent to.
struct PacketPath {
  sockaddr_storage local{};
  socklen_t local_len = 0;
  sockaddr_storage remote{};
  socklen_t remote_len = 0;
  ngtcp2_path path() const;
};

class QuicConnection final : public core::Deferred {
public:
  // A connection for a client's first Initial (hd, from ngtcp2_accept). odcid: the ID the
  // client first chose, when this Initial follows our Retry (its token checked). Null when
  // ngtcp2 or GnuTLS would not set it up.
  static QuicConnection* create(QuicEndpoint& ep, const ngtcp2_pkt_hd& hd, const ngtcp2_cid* odcid,
                                const PacketPath& path);
  ~QuicConnection() override;

  // A datagram for this connection. False: it is over and its endpoint forgets it.
  bool on_packet(const PacketPath& path, const ngtcp2_pkt_info& pi, const uint8_t* data,
                 size_t len);
  void want_write();
  void run_deferred() override;
  // Graceful stop: GOAWAY; the connection closes once its streams are done.
  void drain();
  // Closes at once (the worker stops): CONNECTION_CLOSE, no wait.
  void close_now();
  bool handshake_done() const { return handshake_done_; }

  // For Http3Session.
  void credit(int64_t id, size_t n);
  void shutdown_stream(int64_t id, uint64_t app_error);
  void shutdown_stream_read(int64_t id, uint64_t app_error);
  bool open_uni_stream(int64_t* id);
  std::string_view peer_text() const { return peer_text_; }
  const PacketPath& path() const { return path_; }
  uint16_t listener() const;

private:
  QuicConnection(QuicEndpoint& ep, const PacketPath& path);
  bool init(const ngtcp2_pkt_hd& hd, const ngtcp2_cid* odcid);
  static QuicConnection* self(void* p) { return static_cast<QuicConnection*>(p); }
  static ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref);

  void write();
  // The connection failed: CONNECTION_CLOSE with the error, then the closing period.
  void fail(const ngtcp2_connection_close_error& e);
  void start_closing_period();
  void start_draining_period();
  // Gone: the endpoint forgets its IDs and disposes of it.
  void finish();
  void arm_timer();
  static void timer_cb(struct ev_loop*, ev_timer* w, int);
  void on_timer();

  static int on_handshake_completed(ngtcp2_conn*, void* ud);
  static int on_recv_stream_data(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t offset,
                                 const uint8_t* data, size_t len, void* ud, void* sud);
  static int on_acked_stream_data_offset(ngtcp2_conn*, int64_t id, uint64_t offset, uint64_t len,
                                         void* ud, void* sud);
  static int on_stream_close(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t app_error, void* ud,
                             void* sud);
  static int on_stream_reset(ngtcp2_conn*, int64_t id, uint64_t final_size, uint64_t app_error,
                             void* ud, void* sud);
  static int on_stream_stop_sending(ngtcp2_conn*, int64_t id, uint64_t app_error, void* ud,
                                    void* sud);
  static int on_extend_max_stream_data(ngtcp2_conn*, int64_t id, uint64_t max_data, void* ud,
                                       void* sud);
  static int on_extend_max_remote_streams_bidi(ngtcp2_conn*, uint64_t max_streams, void* ud);
  static void on_rand(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*);
  static int on_get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen,
                                      void* ud);
  static int on_remove_connection_id(ngtcp2_conn*, const ngtcp2_cid* cid, void* ud);

  enum class State : uint8_t {
    OPEN,     // handshake or serving
    CLOSING,  // we sent CONNECTION_CLOSE: it is sent again to what still comes
    DRAINING, // the client closed: nothing is sent
    GONE,
  };

  QuicEndpoint& ep_;
  PacketPath path_;
  std::string peer_text_;
  ngtcp2_conn* conn_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  std::shared_ptr<const QuicTlsContext> tls_ctx_; // the credentials outlive the session
  ngtcp2_crypto_conn_ref ref_{};
  ngtcp2_cid original_dcid_{}; // the client's first choice, which its Initials still carry
  std::unique_ptr<Http3Session> h3_;
  ev_timer timer_;
  std::vector<uint8_t> close_packet_; // CONNECTION_CLOSE, for what comes while closing
  uint64_t app_error_ = 0;            // HTTP/3's error, from a callback, for the close that follows
  State state_ = State::OPEN;
  bool handshake_done_ = false;
  bool draining_ = false; // a graceful stop asked: close once idle
};

} // namespace portico::quic
