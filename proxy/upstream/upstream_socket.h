#pragma once
// What both upstream connection kinds share past the socket itself: the cluster's TLS, when it
// has one. Once connect(2) has finished, advance_connect() starts the TLS session and drives its
// handshake (within the connection's connect_timeout, on its one timer), insisting on an ALPN
// protocol where the kind needs one; the pool hears of a failure the same way whichever kind
// met it. Afterwards reads go through the session when there is one, the session is offered to
// the pool for resumption, and close_notify goes out before the socket closes.
#include "core/byte_queue.h"
#include "core/socket_connection.h"
#include "tls/tls_session.h"
#include "upstream/upstream_error.h"

#include <memory>
#include <string_view>
#include <sys/types.h>

namespace portico::upstream {

class UpstreamPool;

class UpstreamSocket : public core::SocketConnection {
protected:
  UpstreamSocket(UpstreamPool& pool, int fd);

  // Where a connection being set up stands after advance_connect().
  enum class Connect : uint8_t {
    ESTABLISHED, // connected, and the TLS handshake (if any) done: requests may go
    WAITING,     // the handshake waits for the socket (the watchers are set for it)
    FAILED,      // *why says how: a failed connect (CONNECT_REFUSED) is counted and reported
                 // to the pool already; LOCAL_RESOURCES (no memory for TLS) is not
  };
  // Call when the socket is writable while connecting (connect(2) finished), and readable or
  // writable again while a handshake is under way. alpn: the protocol the upstream must agree
  // to over TLS ("h2"), or "" for none.
  Connect advance_connect(std::string_view alpn, UpstreamError* why);
  // One read through TLS when there is a session, else one read(2).
  Read read_some(char* buf, size_t len, size_t* n);
  // Writes what out holds, through TLS when there is a session: the bytes taken, or -1 with
  // errno (EAGAIN: none could go now; EPIPE: the TLS stream failed or was closed).
  ssize_t write_out(core::ByteQueue& out);
  // OpenSSL holds decrypted bytes the socket will not signal.
  bool tls_pending() const { return tls_ && tls_->pending(); }
  // Offers the session to the pool once, so the next connection to the endpoint resumes it.
  void keep_tls_session();
  // close_notify, best effort, before the socket closes.
  void end_tls();

  UpstreamPool& pool_;                   // the endpoint: loop, limits, health, metrics
  std::unique_ptr<tls::TlsSession> tls_; // null: cleartext

private:
  bool tls_session_kept_ = false;
};

} // namespace portico::upstream
