#pragma once
// One accepted client socket: reads into a pooled block, detects the protocol (the HTTP/2
// preface or HTTP/1.x), hands bytes to its session, and gathers output for one writev per loop
// iteration. Closing is deferred to the context, never done inside a callback.
#include "core/block_pool.h"
#include "core/byte_queue.h"
#include "core/socket_connection.h"
#include "limits/count_table.h"
#include "server/server_session.h"

#include <ev.h>
#include <memory>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace portico::tls {
class TlsSession;
}

namespace portico::server {

class ServerContext;
struct UpgradeToH2;

class ClientConnection final : public core::SocketConnection {
public:
  // tls: the listener's OpenSSL context, or null for cleartext.
  ClientConnection(ServerContext& ctx, int fd, SSL_CTX* tls, const sockaddr_storage& peer,
                   uint16_t listener);
  uint16_t listener() const { return listener_; }
  // A reload renumbered the listeners (ServerContext::reconfigure).
  void set_listener(uint16_t listener) { listener_ = listener; }
  ~ClientConnection() override;
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  ServerContext& context() const { return ctx_; }
  // Its place in its listener's per-client count (max_connections_per_client), given back
  // when it is destroyed.
  std::shared_ptr<limits::CountTable> client_table;
  limits::CountTable::Ticket client_ticket = nullptr;
  core::ByteQueue& output() { return output_; }
  // The rest of a response body is length bytes of file fd from offset, sent by the kernel
  // (sendfile(2)) after what output() holds now; what is queued later follows the file. Takes
  // fd (closed once sent, or with the connection). False, fd untouched: TLS, or a file pending.
  bool send_file(int fd, int64_t offset, int64_t length);
  // Response bytes waiting for the socket: queued, and the file's rest.
  size_t output_pending() const {
    return before_file_.size() + static_cast<size_t>(file_left_) + output_.size();
  }
  bool is_tls() const { return tls_ != nullptr; }
  // Input read and not yet consumed by the session (a pipelined request).
  bool input_buffered() const { return in_ && in_->readable() > 0; }
  // The peer's address as text, for X-Forwarded-For and logs ("unix" on a unix socket): the
  // client's, from its PROXY protocol header on a listener that takes one.
  std::string_view peer_address() const { return {peer_, peer_len_}; }
  // The client's and the proxy's end of the connection (from the PROXY header when there was
  // one), for a PROXY header sent on upstream.
  void socket_addresses(sockaddr_storage& peer, sockaddr_storage& local) const;

  // Output was queued: flush at the end of this loop iteration.
  void want_flush();
  // Offer the unconsumed input to the session again at the end of this iteration.
  void want_input();
  // Stop or resume reading from the socket (backpressure).
  void pause_reading();
  void resume_reading();
  // Close once queued output is written. With linger, keep reading and dropping input for a
  // while first, so the client gets the response rather than a reset.
  void close_after_flush(bool linger);
  // Close now, dropping queued output.
  void close_now();
  // A response cut short: what is queued (its head, the body so far) goes out first, then the
  // close, so that the client sees a short response rather than a close before any answer
  // (which it would take for a request never read). Reading stops at once; a client that does
  // not take the bytes is cut at send_timeout as ever.
  void cut_after_flush();
  // close_now() from the loop's deferral queue: for a caller whose own caller may still use
  // what the close would destroy (an exchange's listener in the middle of a callback).
  void close_soon();
  bool closing() const { return close_state_ != CloseState::OPEN; }
  // Switch to HTTP/2 after an HTTP/1 "Upgrade: h2c" (the 101 is already queued).
  void upgrade_to_h2(const UpgradeToH2& up);
  void drain();
  void goodbye();
  // The grace period is over: the session's last frames (HTTP/2 RST_STREAMs), in one write
  // of what the socket takes now, before close_now.
  void last_words();
  // Closes the connection once idle for t (counted from its last activity), if that is sooner
  // than the keep-alive timeout.
  void expire_idle_within(ev_tstamp t);
  // Marks activity for the idle timer (a response completed).
  void touch() { last_activity_ = ev_now(loop()); }
  // Have the timer look again within t (a session's sleep_due() moved closer). Cheap when it
  // will anyway: the timer is only moved when it is set for later.
  void check_within(ev_tstamp t);

  // From the loop's deferral queue: parse deferred input, write output, or, once closed, have
  // the context destroy this.
  void run_deferred() override;
  size_t index = 0;   // position in the context's list
  uint32_t epoch = 0; // the context's configuration epoch when it was accepted

private:
  enum class CloseState : uint8_t {
    OPEN,               // serving
    AFTER_FLUSH,        // close once output is written
    AFTER_FLUSH_LINGER, // ...then shut the write side and linger (a client still sending)
    LINGERING,          // write side shut, dropping input until EOF or a timer
    CLOSED,             // socket closed; the context destroys the object
  };
  friend const char* to_string(CloseState s);
  // How far the connection's opening has come; TLS and the PROXY header are per listener.
  enum class Stage : uint8_t {
    PROXY_HEADER,  // reading the PROXY protocol header, never a byte past it
    TLS_HANDSHAKE, // the handshake; ALPN picks the session
    PROTOCOL,      // cleartext: the first bytes tell HTTP/1 from the HTTP/2 preface
    SESSION,       // a session serves it (session_ is set)
  };
  friend const char* to_string(Stage s);
  // Forward only: PROXY_HEADER -> TLS_HANDSHAKE | PROTOCOL -> SESSION.
  void set_stage(Stage next);
  // OPEN -> AFTER_FLUSH[_LINGER] -> LINGERING (from _LINGER only) -> CLOSED; any -> CLOSED.
  void set_close_state(CloseState next);
  bool closing_after_flush() const {
    return close_state_ == CloseState::AFTER_FLUSH ||
           close_state_ == CloseState::AFTER_FLUSH_LINGER;
  }

  void on_readable() override;
  void on_writable() override;
  void on_timer() override;
  ev_tstamp check_interval() const;
  // When the request head, handshake or keep-alive wait now under way must end; 0 for none.
  ev_tstamp request_deadline() const;
  // When output that waits for the client must have moved (the connection's, or a stream's);
  // 0 when nothing waits.
  ev_tstamp send_deadline() const;
  // Sets the timer for the nearest deadline, and no later than check_interval() from now so
  // that state changes which do not touch the timer are seen in time.
  void rearm_timer();
  // What the socket holds unsent or unacknowledged (SIOCOUTQ), or -1.
  int socket_queued() const;
  void process_input();
  bool detect_protocol();
  void flush();
  // Cleartext: writes before_file_, the file, then output_, as far as the socket takes them.
  // False: the connection failed (or the file came up short) and must close.
  bool write_plain();
  void release_file();
  void finish_close();
  void linger_read();
  // For the per-protocol connection gauges: 0 HTTP/1.x, 1 HTTP/2.
  void count_session(int protocol);
  void uncount_session();
  // One read from the socket, through TLS when there is TLS: >0 bytes, 0 EOF, -1 with errno.
  ssize_t read_some(char* buf, size_t len);
  // TLS record buffers: in use from a read or write on, given back after kTlsRestAfter without
  // one (rest_tls, from the timer). Memory of a quiet connection, at no cost per record.
  void tls_used() {
    tls_used_at_ = ev_now(loop());
    if (!tls_busy_)
      wake_tls();
  }
  static constexpr ev_tstamp kTlsRestAfter = 1;
  void wake_tls();
  void rest_tls(ev_tstamp now);
  ev_tstamp tls_rest_due() const { return tls_busy_ ? tls_used_at_ + kTlsRestAfter : 0; }
  // Drives the TLS handshake; picks the session by ALPN when it completes. False: not done.
  bool handshake();
  void answer_plain_http(); // HTTP/1 where a TLS handshake belonged: 400, then close
  // Reads the PROXY protocol header, never a byte past it (TLS or HTTP starts right after,
  // and OpenSSL reads the socket itself). False: not complete yet, or the connection closed.
  bool read_proxy_header();
  void set_peer_text(const sockaddr_storage& ss);

  ServerContext& ctx_;
  char peer_[46] = {}; // INET6_ADDRSTRLEN
  uint8_t peer_len_ = 0;
  uint16_t listener_;
  int8_t protocol_ = -1; // counted in the stats as this protocol; -1 not yet
  ev_tstamp last_activity_ = 0;
  ev_tstamp tls_used_at_ = 0;        // the last TLS read or write
  ev_tstamp first_byte_ = 0;         // before a session exists: when its first byte came
  ev_tstamp send_waiting_since_ = 0; // output waiting, and no byte of it taken since
  int send_queued_at_wait_ = -1;     // ...and what the socket held unsent then (SIOCOUTQ)
  ev_tstamp idle_timeout_;
  core::Block* in_ = nullptr;
  core::ByteQueue output_;
  // A file being sent (send_file): what was queued before it, then its rest.
  core::ByteQueue before_file_;
  int file_fd_ = -1;
  int64_t file_offset_ = 0;
  int64_t file_left_ = 0;
  std::unique_ptr<ServerSession> session_;
  std::unique_ptr<ServerSession> next_session_;
  std::unique_ptr<tls::TlsSession> tls_;
  CloseState close_state_ = CloseState::OPEN;
  Stage stage_ = Stage::PROTOCOL;
  sockaddr_storage peer_ss_{};
  // From the PROXY header (proxied_ true), or read with getsockname() when first asked.
  mutable sockaddr_storage local_ss_{};
  mutable bool local_known_ = false;
  std::string proxy_header_; // the part of it read so far
  // Conditions beside CloseState and Stage, each on its own (any may hold in any stage):
  // drain() came before the session did; the session holds reading back; input waits to be
  // parsed in run_deferred; the client's EOF came; close_now() is due in run_deferred (asked
  // from a callback the connection must outlive).
  bool drain_requested_ = false;
  bool reading_paused_ = false;
  bool input_pending_ = false;
  bool eof_ = false;
  bool close_soon_ = false;
  bool tls_busy_ = false;    // the record buffers may be held (tls_used since the last rest)
  bool tls_resting_ = false; // counted in the stats as resting
  friend class ServerContext;
};

} // namespace portico::server
