#include "tls/tls_session.h"

#include <cerrno>
#include <openssl/err.h>

namespace portico::tls {

namespace {

// OpenSSL's rule: the thread's error queue is empty before an I/O call whose result goes to
// SSL_get_error. It nearly always is already (status() empties it after a failure), and
// ERR_clear_error walks all of its slots every time: a peek first saves that walk on every
// read and write.
void clear_stale_errors() {
  if (ERR_peek_error() != 0)
    ERR_clear_error();
}

} // namespace

TlsSession::TlsSession(SSL_CTX* ctx, int fd) : ssl_(SSL_new(ctx)) {
  SSL_set_fd(ssl_, fd);
  SSL_set_accept_state(ssl_);
}

TlsSession::TlsSession(SSL* client) : ssl_(client) {}

SSL_SESSION* TlsSession::resumable_session() const {
  SSL_SESSION* s = SSL_get1_session(ssl_);
  if (s && !SSL_SESSION_is_resumable(s)) {
    SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

const char* TlsSession::verify_error() const {
  long r = SSL_get_verify_result(ssl_);
  return r == X509_V_OK ? nullptr : X509_verify_cert_error_string(r);
}

const char* TlsSession::failure_reason() const {
  if (const char* v = verify_error())
    return v;
  return last_error_ ? last_error_ : "the peer closed the connection";
}

TlsSession::~TlsSession() {
  SSL_free(ssl_);
}

TlsSession::Io TlsSession::status(int rc) {
  switch (SSL_get_error(ssl_, rc)) {
  case SSL_ERROR_WANT_READ: return Io::WANT_READ;
  case SSL_ERROR_WANT_WRITE: return Io::WANT_WRITE;
  case SSL_ERROR_ZERO_RETURN: closed_ = true; return Io::CLOSED;
  case SSL_ERROR_SYSCALL:
    ERR_clear_error();
    // EOF without close_notify, or a reset: either way the peer is gone.
    if (errno == 0 || errno == ECONNRESET || errno == EPIPE) {
      closed_ = true;
      return Io::CLOSED;
    }
    return Io::ERROR;
  default:
    // Kept for the error log: the reason is gone once the queue is cleared.
    if (unsigned long e = ERR_peek_last_error()) {
      last_error_ = ERR_reason_error_string(e);
      plain_http_ = ERR_GET_REASON(e) == SSL_R_HTTP_REQUEST;
    }
    ERR_clear_error();
    return Io::ERROR;
  }
}

TlsSession::Io TlsSession::handshake() {
  clear_stale_errors();
  errno = 0;
  int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    established_ = true;
    return Io::OK;
  }
  return status(rc);
}

std::string_view TlsSession::alpn() const {
  const unsigned char* p = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl_, &p, &len);
  return {reinterpret_cast<const char*>(p), len};
}

TlsSession::Io TlsSession::read(char* buf, size_t len, size_t* n) {
  clear_stale_errors();
  errno = 0;
  size_t got = 0;
  int rc = SSL_read_ex(ssl_, buf, len, &got);
  if (rc == 1) {
    *n = got;
    return Io::OK;
  }
  *n = 0;
  return status(rc);
}

TlsSession::Io TlsSession::write(core::ByteQueue& q) {
  while (!q.empty()) {
    std::string_view chunk = q.front();
    if (chunk.empty()) {
      q.drain(0);
      continue;
    }
    clear_stale_errors();
    errno = 0;
    size_t written = 0;
    int rc = SSL_write_ex(ssl_, chunk.data(), chunk.size(), &written);
    if (rc != 1)
      return status(rc);
    q.drain(written);
  }
  return Io::OK;
}

void TlsSession::shutdown() {
  if (established_ && !closed_) {
    ERR_clear_error();
    SSL_shutdown(ssl_); // one attempt: a close_notify if the socket takes it, no waiting
    ERR_clear_error();
  }
}

} // namespace portico::tls
