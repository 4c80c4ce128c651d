// What an HTTP/2 client connection is allowed, beside the protocol nghttp2 checks: the glitch
// budget (frames that serve no request, and header blocks HPACK multiplied, end in
// GOAWAY(ENHANCE_YOUR_CALM)), the stream ids a
// client skipped (RFC 9113 5.1.1, which nghttp2 leaves unchecked), and the send timeout of a
// stream whose window the client keeps shut. Part of Http2ServerSession.
#include "http/nghttp2_check.h"
#include "server/client_connection.h"
#include "server/http2_server_session.h"
#include "server/server_context.h"

namespace portico::server {

int Http2ServerSession::glitch(bool closed_stream) {
  if (replaying_)
    return 0; // counted when the frames first came
  ev_tstamp now = ev_now(conn_.loop());
  if (closed_stream ? glitches_.spend_on_closed_stream(now) : glitches_.spend(now))
    return 0;
  PORTICO_NGHTTP2_MUST(nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM));
  return NGHTTP2_ERR_CALLBACK_FAILURE;
}

int Http2ServerSession::decoded_field(size_t bytes) {
  if (replaying_ || glitches_.decoded(bytes, ev_now(conn_.loop())))
    return 0;
  PORTICO_NGHTTP2_MUST(nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM));
  return NGHTTP2_ERR_CALLBACK_FAILURE;
}

ev_tstamp Http2ServerSession::oldest_send_wait() const {
  ev_tstamp oldest = 0;
  for (const Http2Exchange* st = streams_.front(); st; st = Streams::next(st))
    if (st->send_waiting_since_ > 0 && (oldest == 0 || st->send_waiting_since_ < oldest))
      oldest = st->send_waiting_since_;
  return oldest;
}

void Http2ServerSession::expire_send_waits(ev_tstamp before) {
  for (Http2Exchange* st = streams_.front(); st; st = Streams::next(st)) {
    if (st->send_waiting_since_ == 0 || st->send_waiting_since_ > before)
      continue;
    // With both windows open the stream waits for its turn among the connection's others
    // (nghttp2 frames a few at a time), or for the socket, which the connection's own
    // send_timeout judges: the client is not holding it back, its clock starts again.
    if (nghttp2_session_get_remote_window_size(session_) > 0 &&
        nghttp2_session_get_stream_remote_window_size(session_, st->id_) > 0) {
      st->send_waiting_since_ = ev_now(conn_.loop());
      continue;
    }
    // The client keeps a window shut: the stream goes, the connection and its other streams
    // stay. The upstream side is released when the reset closes the stream.
    st->send_waiting_since_ = 0;
    conn_.context().stats().count(ClientTimeout::STREAM_SEND);
    reset_stream(*st, NGHTTP2_CANCEL);
  }
}

int Http2ServerSession::on_begin_frame(nghttp2_session* s, const nghttp2_frame_hd* hd, void* ud) {
  auto* me = self(ud);
  switch (hd->type) {
  case NGHTTP2_HEADERS:
    // Before nghttp2 judges it: a HEADERS frame on an id the client skipped is a connection
    // error (RFC 9113 5.1.1), which nghttp2 would ignore.
    if ((hd->stream_id & 1) && !me->stream_ids_.on_headers(hd->stream_id)) {
      PORTICO_NGHTTP2_MUST(nghttp2_session_terminate_session(s, NGHTTP2_PROTOCOL_ERROR));
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    me->glitches_.header_block_frame(hd->length, true);
    break;
  case NGHTTP2_CONTINUATION: me->glitches_.header_block_frame(hd->length, false); break;
  case NGHTTP2_DATA:
    if (hd->length == 0 && !(hd->flags & NGHTTP2_FLAG_END_STREAM))
      return me->glitch(); // carries nothing, ends nothing
    break;
  case NGHTTP2_PRIORITY: // RFC 9113 deprecates them; we schedule without them
    return me->glitch();
  case NGHTTP2_RST_STREAM:
  case NGHTTP2_WINDOW_UPDATE:
    // For a stream that is not open: nghttp2 ignores these silently once a stream is closed.
    // A stream that just closed excuses a few (GlitchBudget::stream_closed).
    if (hd->stream_id != 0 && !me->stream_of(s, hd->stream_id))
      return me->glitch(true);
    break;
  default: break;
  }
  return 0;
}

int Http2ServerSession::on_invalid_frame_recv(nghttp2_session*, const nghttp2_frame*, int,
                                              void* ud) {
  // nghttp2 answers the frame itself (a reset stream or a GOAWAY); a flood of them is ours.
  return self(ud)->glitch();
}

} // namespace portico::server
