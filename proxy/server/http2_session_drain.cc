// How an HTTP/2 session ends gracefully: the drain's two GOAWAYs, the goodbye to long-lived
// streams (ServerContext::goodbye), and the RST_STREAMs when the grace period is over.
#include "server/http2_server_session.h"

#include "http/nghttp2_check.h"
#include "server/client_connection.h"
#include "server/http2_exchange.h"
#include "server/server_context.h"

namespace portico::server {

void Http2ServerSession::drain() {
  if (lifecycle_ != Lifecycle::OPEN)
    return; // draining already, or closing: a failed session's GOAWAY is on its way
  set_lifecycle(Lifecycle::DRAINING);
  if (!session_)
    wake();
  // Two GOAWAYs (RFC 9113 6.8): first a notice that takes no stream away, then, once a PING
  // has made the round trip, the last stream id. A request the client sent meanwhile is
  // served instead of silently refused.
  PORTICO_NGHTTP2_MUST(nghttp2_submit_shutdown_notice(session_));
  PORTICO_NGHTTP2_MUST(nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr));
  conn_.expire_idle_within(conn_.context().limits().drain_idle_grace);
  want_write();
}

void Http2ServerSession::goodbye() {
  // A goodbye may end its stream (and unlink it): the next one is taken first.
  for (Http2Exchange* st = streams_.front(); st;) {
    Http2Exchange* next = Streams::next(st);
    if (st->listener_)
      st->listener_->on_goodbye(*st);
    st = next;
  }
  want_write();
}

void Http2ServerSession::last_words() {
  if (!session_)
    return; // asleep: it has no stream
  // CANCEL: the stream's work is no longer wanted (RFC 9113 7); a gRPC client reports
  // CANCELLED, where a bare close reads as the network failing.
  for (Http2Exchange* st = streams_.front(); st; st = Streams::next(st))
    if (st->id_ > 0)
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, st->id_, NGHTTP2_CANCEL);
}

void Http2ServerSession::send_final_goaway() {
  if (lifecycle_ != Lifecycle::DRAINING)
    return;
  set_lifecycle(Lifecycle::CLOSING);
  PORTICO_NGHTTP2_MUST(nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                                             nghttp2_session_get_last_proc_stream_id(session_),
                                             NGHTTP2_NO_ERROR, nullptr, 0));
  want_write();
}

} // namespace portico::server
