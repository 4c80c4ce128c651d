// A client connection's TLS: the handshake (and nginx's clear-text 400 for plain HTTP where a
// ClientHello belonged), and its record buffers, given back while the connection is quiet.
#include "core/error_log.h"
#include "core/small_allocator.h"
#include "server/client_connection.h"
#include "server/http1_server_session.h"
#include "server/http2_server_session.h"
#include "server/plain_http_reply.h"
#include "server/server_context.h"
#include "tls/tls_session.h"

namespace portico::server {

void ClientConnection::answer_plain_http() {
  send_plain_http_reply(fd_);
  core::log::write(core::log::Level::INFO, core::log::Kind::TLS_HANDSHAKE,
                   "plain HTTP from %.*s on TLS listener %u: answered 400",
                   static_cast<int>(peer_len_), peer_, static_cast<unsigned>(listener_));
  close_now();
}

bool ClientConnection::handshake() {
  switch (tls_->handshake()) {
  case tls::TlsSession::Io::OK: break;
  case tls::TlsSession::Io::WANT_READ: ev_io_stop(loop(), &wev_); return false;
  case tls::TlsSession::Io::WANT_WRITE: ev_io_start(loop(), &wev_); return false;
  case tls::TlsSession::Io::CLOSED:
  case tls::TlsSession::Io::ERROR:
    ctx_.stats().tls_handshake_failures.inc();
    if (tls_->plain_http()) {
      answer_plain_http();
      return false;
    }
    core::log::write(core::log::Level::WARN, core::log::Kind::TLS_HANDSHAKE,
                     "TLS handshake with %.*s on listener %u failed: %s",
                     static_cast<int>(peer_len_), peer_, static_cast<unsigned>(listener_),
                     tls_->last_error() ? tls_->last_error() : "the client closed the connection");
    close_now();
    return false;
  }
  ev_io_stop(loop(), &wev_);
  // ALPN decides: no preface sniffing on TLS (h2c belongs to cleartext only).
  ctx_.stats().tls_handshakes.inc();
  if (tls_->alpn() == "h2")
    session_ = std::make_unique<Http2ServerSession>(*this, nullptr);
  else
    session_ = std::make_unique<Http1ServerSession>(*this);
  set_stage(Stage::SESSION);
  count_session(tls_->alpn() == "h2" ? 1 : 0);
  if (ctx_.draining() || drain_requested_)
    session_->drain();
  want_flush(); // the HTTP/2 server preface
  return true;
}

void ClientConnection::wake_tls() {
  tls_busy_ = true;
  if (tls_resting_) {
    tls_resting_ = false;
    ctx_.stats().tls_woke.inc();
  }
  check_within(kTlsRestAfter);
}

void ClientConnection::rest_tls(ev_tstamp now) {
  // Not while output waits (its records are in the write buffer); and OpenSSL keeps them while
  // they hold bytes (a record read ahead, or one not yet sent): try again a period later.
  if (output_pending() > 0 || !tls_->release_buffers()) {
    tls_used_at_ = now;
    return;
  }
  tls_busy_ = false;
  tls_resting_ = true;
  ctx_.stats().tls_rested.inc();
  // A read and a write buffer of a full record each (OpenSSL does not say their size): what a
  // burst of connections leaves is then returned to the kernel by the next trim.
  core::SmallAllocator::local().note_large_freed(2 * 17 * 1024);
}

} // namespace portico::server
