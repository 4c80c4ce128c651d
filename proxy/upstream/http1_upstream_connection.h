#pragma once
// One HTTP/1.1 keep-alive connection to an upstream endpoint, owned by its Http1ConnectionPool. It
// carries one exchange at a time (never pipelined). While idle in the pool it keeps reading, so
// an upstream's close is noticed before the connection is reused, not after.
#include "core/block_pool.h"
#include "core/byte_queue.h"
#include "core/intrusive_list.h"
#include "http/arena.h"
#include "http/http1_response_parser.h"
#include "upstream/upstream_socket.h"
#include "upstream/upstream_stream.h"
#include "upstream/upstream_stream_listener.h"

#include <ev.h>
#include <memory>

namespace portico::upstream {

class UpstreamPool;
class Http1ConnectionPool;

class Http1UpstreamConnection final : public UpstreamSocket,
                                      public UpstreamStream,
                                      private http::Http1ResponseParser::Sink {
public:
  enum class State {
    CONNECTING, // connect(2) in progress; request bytes may already be queued
    ACTIVE,     // carrying an exchange
    IDLE,       // in the pool, watched for EOF
    CLOSED,     // socket closed; the pool destroys the object after this iteration
  };
  // While ACTIVE, how far the exchange's request has gone and how far its response has come:
  // two enums, as the two go on independently (an upstream may answer before the request's
  // end, and a 101 turns both into a tunnel).
  enum class RequestPhase : uint8_t {
    SENDING,  // head or body bytes may still come from the client
    COMPLETE, // the whole request is in the output
    SENT,     // ...and written: response_timeout runs from here
  };
  enum class ResponsePhase : uint8_t {
    AWAITING,  // no response byte yet: a failure now may be retried (Delivery::UNANSWERED)
    RECEIVING, // response bytes came
    DONE,      // the parser saw its end
    TUNNEL,    // the 101 came: bytes both ways are a WebSocket tunnel's
  };

  Http1UpstreamConnection(Http1ConnectionPool& conns, int fd, bool connected);
  ~Http1UpstreamConnection() override;
  Http1UpstreamConnection(const Http1UpstreamConnection&) = delete;
  Http1UpstreamConnection& operator=(const Http1UpstreamConnection&) = delete;

  State state() const { return state_; }
  // Starts an exchange for client. head_request: the response has no body.
  void attach(UpstreamStreamListener* client, bool head_request);
  // UpstreamStream. detach: the connection cannot be trusted again; it closes.
  void send_head(const http::RequestHead& req, BodyFraming framing, const ClientOrigin& client,
                 const ForwardingOptions& fwd) override;
  void send_body(std::string_view data) override;
  void end_request(std::span<const http::Header> trailers) override;
  void set_tunnel_timeout(double seconds) override;
  void detach() override;
  void pause_reading() override;
  void resume_reading() override;
  size_t buffered() const override { return out_.size(); }
  bool first_on_connection() const override { return requests_ == 1; }
  double connect_seconds() const override { return connect_seconds_; }

  void want_flush();
  void close();
  // Nothing waits to be read: no stray byte, no EOF (a system call). Checked before a
  // connection goes straight from its finished exchange to a waiting request, so that bytes
  // an upstream sent after its response are never read as the next request's.
  bool quiet() const;
  // An idle connection's read watcher has fired in this loop iteration and not yet run: it
  // closed or sent something. An idle connection is otherwise watched, so this free check is
  // what reusing one needs.
  bool idle_event_pending() const { return ev_is_pending(&rev_); }

  // Pool bookkeeping.
  core::ListHook<Http1UpstreamConnection> idle_hook; // in the pool's idle list
  double idle_until = 0;
  double idle_since = 0;

private:
  void on_readable() override;
  void on_writable() override;
  void on_timer() override;
  // connect(2) finished, or the TLS handshake after it moved (upstream_socket.h).
  void advance();
  // The exchange-carrying half of on_connected, once the connection (and TLS) is up.
  void on_established();
  // OpenSSL holds decrypted bytes the socket will not signal: read again next iteration.
  void release_input();
  void reread_pending_tls();
  void flush();
  void write_now();
  // counted: the error is in the metrics already (a failed connect, reported as it was met).
  void fail(UpstreamError e, bool counted = false);
  void finish_exchange();
  void run_deferred() override;
  // After a 101: bytes are relayed as they come, until either side ends.
  void read_tunnel();

  void on_response_head(http::UpstreamResponseHead& head) override;
  void on_response_body(std::string_view data) override;
  void on_response_trailer(std::string_view name, std::string_view value) override;
  void on_response_end() override;

  Http1ConnectionPool& conns_; // where it idles between exchanges
  State state_ = State::CONNECTING;
  double last_read_ = 0;
  double last_progress_ = 0; // a request byte came from the client or left for the upstream
  double connect_started_ = 0;
  double connect_seconds_ = 0;
  double reused_after_idle_ = 0; // this exchange took the connection after this long idle
  core::Block* in_ = nullptr;
  core::ByteQueue out_;
  // The response head's lowercased names, or a head that came in pieces: a few dozen bytes as
  // a rule, and one of these per upstream connection, busy or idle.
  http::InlineArena<256> arena_;
  http::UpstreamResponseHead head_;
  http::Http1ResponseParser parser_;
  UpstreamStreamListener* client_ = nullptr;
  uint32_t requests_ = 0;
  BodyFraming framing_ = BodyFraming::NONE;
  // The current exchange's two halves, each one step of State::ACTIVE. The connection is
  // never reused after a TUNNEL request, upgraded or not.
  RequestPhase request_ = RequestPhase::SENDING;
  ResponsePhase response_ = ResponsePhase::AWAITING;
  // Conditions of the flow rather than steps: the client holds our reading back; the client
  // has shut its side of the tunnel (our SHUT_WR follows once the output is empty).
  bool reading_paused_ = false;
  bool tunnel_write_shut_ = false;
  // A write met EPIPE or ECONNRESET: the upstream reads no more, whatever it still sends.
  bool write_failed_ = false;
  double tunnel_timeout_ = 300;
};

const char* to_string(Http1UpstreamConnection::State s);
const char* to_string(Http1UpstreamConnection::RequestPhase p);
const char* to_string(Http1UpstreamConnection::ResponsePhase p);

} // namespace portico::upstream
