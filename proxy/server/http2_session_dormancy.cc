// Dormancy of an HTTP/2 connection that has opened no stream: part of Http2ServerSession.
// Browsers open connections ahead of need and clients keep spares; each idle one held a whole
// nghttp2 session (its 2.9 KiB struct, a 4 KiB stream map, a 16 KiB frame buffer of which the
// SETTINGS touched a page). Until the first HEADERS frame, what the session knows is exactly what
// the client sent (its preface, SETTINGS, WINDOW_UPDATEs, PINGs, its ACK of ours) and what we
// sent in return: replaying those bytes into a new session, after the same SETTINGS and window
// of ours, rebuilds the same state, and what it would send again was sent already.
#include "core/error_log.h"
#include "http/nghttp2_check.h"
#include "server/client_connection.h"
#include "server/http2_server_session.h"
#include "server/server_context.h"

#include <cstring>

namespace portico::server {

void Http2ServerSession::keep_prelude(const char* data, size_t n) {
  if (!prelude_kept_)
    return;
  if (prelude_len_ + n > kPreludeMax) {
    prelude_kept_ = false; // a talkative client keeps its session
    return;
  }
  std::memcpy(prelude_ + prelude_len_, data, n);
  prelude_len_ = static_cast<uint16_t>(prelude_len_ + n);
}

void Http2ServerSession::on_output_flushed() {
  if (!prelude_kept_ || !session_ || lifecycle_ != Lifecycle::OPEN || upgraded_stream_ ||
      !streams_.empty() || nghttp2_session_want_write(session_) ||
      !nghttp2_session_want_read(session_))
    return;
  nghttp2_session_del(session_);
  session_ = nullptr;
  conn_.context().stats().h2_dormant_entered.inc();
}

void Http2ServerSession::wake() {
  conn_.context().stats().h2_dormant_left.inc();
  new_session();
  send_settings();
  replaying_ = true;
  ssize_t rv =
      nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(prelude_), prelude_len_);
  // Frames the first session already sent (our SETTINGS and window, ACKs, PING answers).
  const uint8_t* discard;
  while (rv >= 0 && nghttp2_session_mem_send(session_, &discard) > 0) {
  }
  replaying_ = false;
  // The same bytes were taken once: only our own mistake can refuse them now.
  if (rv != prelude_len_) {
    core::log::write(core::log::Level::ERROR, core::log::Kind::GENERAL,
                     "HTTP/2: a dormant connection's prelude replayed with %zd", rv);
    fail();
  }
}

} // namespace portico::server
