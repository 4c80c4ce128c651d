#pragma once
// HTTP/2 for one client connection on an nghttp2 server session: frames in through
// nghttp2_session_mem_recv, frames out once per loop iteration through nghttp2_session_mem_send
// into the connection's queue, DATA payloads moved from each stream's queue without a copy
// (NGHTTP2_DATA_FLAG_NO_COPY). Flow control is manual: a request's DATA is acknowledged with
// WINDOW_UPDATE only once its consumer has taken it.
#include "core/intrusive_list.h"
#include "http/response_head.h"
#include "server/h2_frame_boundary.h"
#include "server/h2_glitch_budget.h"
#include "server/h2_stream_ids.h"
#include "server/h2c_upgrade.h"
#include "server/http2_exchange.h"
#include "server/server_session.h"

#include <nghttp2/nghttp2.h>
#include <vector>

namespace portico::server {

class ClientConnection;
class Http2Exchange;

class Http2ServerSession final : public ServerSession {
public:
  // The session's life, beside its streams' (Http2Exchange) and its connection's.
  enum class Lifecycle : uint8_t {
    OPEN,     // serving streams
    DRAINING, // the shutdown notice and a PING are out; streams the client opens meanwhile
              // are still served (RFC 9113 6.8)
    CLOSING,  // the PING came back and the GOAWAY with the real last stream id went out
    FAILED,   // a protocol error or a failed upgrade: nothing more is read, and the connection
              // closes once the GOAWAY saying why has been written
  };
  Lifecycle lifecycle() const { return lifecycle_; }

  // up is non-null when this session takes over from "Upgrade: h2c".
  Http2ServerSession(ClientConnection& conn, const UpgradeToH2* up);
  ~Http2ServerSession() override;

  void on_activate() override;
  size_t on_input(const char* data, size_t len) override;
  void on_eof() override;
  bool output_waiting() const override {
    return session_ && nghttp2_session_want_write(session_) != 0;
  }
  void on_output_flushed() override;
  void before_flush() override;
  void on_output_drained() override;
  bool idle() const override { return streams_.empty(); }
  ev_tstamp head_started() const override { return header_block_since_; }
  bool reads_are_activity() const override { return false; }
  ev_tstamp oldest_send_wait() const override;
  void expire_send_waits(ev_tstamp before) override;
  void on_timeout() override;
  ev_tstamp sleep_due() const override;
  void on_sleep_due() override;
  void drain() override;
  void goodbye() override;
  void last_words() override;
  void on_close() override;

  // For Http2Exchange.
  ClientConnection& connection() { return conn_; }
  nghttp2_session* nghttp2() { return session_; }
  bool dormant() const { return !session_; }
  void submit_response(Http2Exchange& st, const http::ResponseHead& head);
  void resume_stream(Http2Exchange& st);
  void consume(Http2Exchange& st, size_t n);
  void reset_stream(Http2Exchange& st, uint32_t error_code);
  // The request broke a rule of RFC 9113 8.1.1 (H2RequestRules): its stream is reset with
  // PROTOCOL_ERROR and nothing more of it is taken. invalid_frame: counted as nghttp2 counts
  // an invalid frame (a glitch); returns what an nghttp2 callback returns.
  int malformed(Http2Exchange& st, bool invalid_frame);
  void want_write();

private:
  static int on_begin_frame(nghttp2_session*, const nghttp2_frame_hd*, void*);
  static int on_invalid_frame_recv(nghttp2_session*, const nghttp2_frame*, int, void*);
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_header(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t,
                       const uint8_t*, size_t, uint8_t, void*);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_data_chunk_recv(nghttp2_session*, uint8_t, int32_t, const uint8_t*, size_t, void*);
  static int on_stream_close(nghttp2_session*, int32_t, uint32_t, void*);
  static int on_frame_send(nghttp2_session*, const nghttp2_frame*, void*);
  static int send_data(nghttp2_session*, nghttp2_frame*, const uint8_t*, size_t,
                       nghttp2_data_source*, void*);
  static ssize_t read_data(nghttp2_session*, int32_t, uint8_t*, size_t, uint32_t*,
                           nghttp2_data_source*, void*);
  static const nghttp2_session_callbacks* callbacks();
  static Http2ServerSession* self(void* user_data) {
    return static_cast<Http2ServerSession*>(user_data);
  }
  // The exchange of stream id: the header block's last begun without a lookup (its fields come
  // one callback each), any other from nghttp2's stream map.
  Http2Exchange* stream_of(nghttp2_session* s, int32_t id) const {
    if (header_block_exchange_ && header_block_exchange_->id_ == id)
      return header_block_exchange_;
    return static_cast<Http2Exchange*>(nghttp2_session_get_stream_user_data(s, id));
  }

  void new_session();
  // Dormancy (http2_session_dormancy.cc): a connection that has opened no stream yet gives
  // its nghttp2 session back while nothing is to be sent (nginx holds ~1.5 KiB for an idle h2
  // connection, a session ~14 KiB); what the client had sent, a few hundred bytes of
  // connection frames at most, is kept and replayed into a new session when it speaks again.
  // A used one does after limits().h2_sleep_after without a stream, once the client has
  // emptied our HPACK table; the frames replayed are then written to restore its state.
  void keep_prelude(const char* data, size_t n);
  void try_sleep();
  bool may_sleep_used();
  void write_used_prelude();
  void wake();
  void settle_last_stream();
  void submit_table_size(uint32_t size);
  void dispatch(Http2Exchange& st);
  void request_ended(Http2Exchange& st);
  void send_settings();
  void link(Http2Exchange* st);
  void unlink(Http2Exchange* st);
  void fail();
  // One glitch (see GlitchBudget): 0, or once the budget is spent, the callback failure that
  // ends the connection after a GOAWAY(ENHANCE_YOUR_CALM). closed_stream: a frame for a
  // stream that is not open, which a stream closed just before may excuse.
  int glitch(bool closed_stream = false);
  // A decoded request header field of `bytes` (name, value and 32), charged to the glitch
  // budget past its block's allowance: 0, or the callback failure glitch() returns.
  int decoded_field(size_t bytes);
  void send_final_goaway();

  ClientConnection& conn_;
  nghttp2_session* session_ = nullptr;
  Http2Exchange* upgraded_stream_ = nullptr;
  using Streams = core::IntrusiveList<Http2Exchange, &Http2Exchange::hook_>;
  Streams streams_;                      // open streams, for aborting them on close
  std::vector<Http2Exchange*> writable_; // streams to tell they may produce again
  ev_tstamp header_block_since_ = 0;     // a request's HEADERS came, its END_HEADERS not yet
  int32_t header_block_stream_ = 0;      // ...on this stream, whose close ends the wait too
  // The exchange of the request header block last begun, until its stream closes (stream_of).
  Http2Exchange* header_block_exchange_ = nullptr;
  // OPEN -> DRAINING -> CLOSING; any but FAILED -> FAILED.
  void set_lifecycle(Lifecycle next);
  GlitchBudget glitches_;
  ClientStreamIds stream_ids_;
  H2FrameBoundary frames_in_; // no sleep with a frame half received
  static constexpr size_t kPreludeMax = 256;
  bool prelude_kept_ = true;        // prelude_ holds everything the client sent: dormancy allowed
  bool replaying_ = false;          // wake() feeds the prelude again: no glitch is counted twice
  bool sleep_wanted_ = false;       // a used session was quiet for h2_sleep_after
  bool table_shrunk_ = false;       // our SETTINGS asked for an HPACK table of 0 (to sleep)
  bool goaway_received_ = false;    // the client is leaving: no sleep
  uint8_t settings_unacked_ = 0;    // our SETTINGS frames sent and not acknowledged yet
  int32_t asleep_last_stream_ = 0;  // asleep after streams: the last one's id (else 0)
  uint16_t asleep_window_debt_ = 0; // ...and how far its connection window was below 65,535
  ev_tstamp quiet_since_ = 0;       // the last stream closed
  uint16_t prelude_len_ = 0;
  char prelude_[kPreludeMax];
  Lifecycle lifecycle_ = Lifecycle::OPEN;
};

const char* to_string(Http2ServerSession::Lifecycle l);

} // namespace portico::server
