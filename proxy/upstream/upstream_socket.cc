#include "upstream/upstream_socket.h"

#include "core/endpoint_address.h"
#include "upstream/upstream_pool.h"

#include <cerrno>
#include <string>

namespace portico::upstream {

UpstreamSocket::UpstreamSocket(UpstreamPool& pool, int fd)
    : core::SocketConnection(pool.loop(), fd), pool_(pool) {}

UpstreamSocket::Connect UpstreamSocket::advance_connect(std::string_view alpn, UpstreamError* why) {
  if (!tls_) {
    if (!core::connect_succeeded(fd_)) {
      pool_.note_connect_failed(UpstreamError::CONNECT_REFUSED);
      pool_.metrics().errors.connect_refused().inc();
      *why = UpstreamError::CONNECT_REFUSED;
      return Connect::FAILED;
    }
    if (!pool_.tls())
      return Connect::ESTABLISHED;
    tls_ = pool_.start_tls(fd_);
    if (!tls_) {
      // The proxy's own shortage (memory): nothing is wrong with the endpoint, and the
      // connection counts it with the requests it fails.
      *why = UpstreamError::LOCAL_RESOURCES;
      return Connect::FAILED;
    }
  }
  std::string failure;
  switch (tls_->handshake()) {
  case tls::TlsSession::Io::OK:
    if (alpn.empty() || tls_->alpn() == alpn)
      return Connect::ESTABLISHED;
    failure = "the upstream did not agree to " + std::string(alpn) + " (ALPN)";
    break;
  case tls::TlsSession::Io::WANT_READ:
    ev_io_stop(loop(), &wev_);
    ev_io_start(loop(), &rev_);
    return Connect::WAITING;
  case tls::TlsSession::Io::WANT_WRITE: ev_io_start(loop(), &wev_); return Connect::WAITING;
  case tls::TlsSession::Io::CLOSED:
  case tls::TlsSession::Io::ERROR: failure = tls_->failure_reason(); break;
  }
  pool_.tls_failed(failure.c_str()); // logged, held down and counted as a refused connect
  *why = UpstreamError::CONNECT_REFUSED;
  return Connect::FAILED;
}

core::SocketConnection::Read UpstreamSocket::read_some(char* buf, size_t len, size_t* n) {
  if (!tls_)
    return read_once(buf, len, n);
  switch (tls_->read(buf, len, n)) {
  case tls::TlsSession::Io::OK: return Read::DATA;
  case tls::TlsSession::Io::WANT_READ:
  case tls::TlsSession::Io::WANT_WRITE: return Read::WOULD_BLOCK;
  case tls::TlsSession::Io::CLOSED: return Read::END;
  case tls::TlsSession::Io::ERROR: break;
  }
  return Read::FAILED;
}

ssize_t UpstreamSocket::write_out(core::ByteQueue& out) {
  if (!tls_)
    return out.write_to(fd_);
  size_t before = out.size();
  tls::TlsSession::Io r = tls_->write(out);
  if (r == tls::TlsSession::Io::CLOSED || r == tls::TlsSession::Io::ERROR) {
    errno = EPIPE;
    return -1;
  }
  if (before == out.size()) {
    errno = EAGAIN;
    return -1;
  }
  return static_cast<ssize_t>(before - out.size());
}

void UpstreamSocket::keep_tls_session() {
  if (!tls_ || tls_session_kept_)
    return;
  if (SSL_SESSION* s = tls_->resumable_session()) {
    pool_.keep_tls_session(s);
    tls_session_kept_ = true;
  }
}

void UpstreamSocket::end_tls() {
  if (tls_ && tls_->established())
    tls_->shutdown();
}

} // namespace portico::upstream
