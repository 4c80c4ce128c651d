#pragma once
// The TLS side of one client connection: handshake, reads and writes through OpenSSL on the
// socket. Output goes out one ByteQueue block per SSL_write, so each call makes one full
// record (blocks are just under 16 KiB, the record limit).
#include "core/byte_queue.h"

#include <openssl/ssl.h>
#include <string_view>
#include <sys/types.h>

namespace portico::tls {

class TlsSession {
public:
  enum class Io {
    OK,         // progress made
    WANT_READ,  // wait for the socket to be readable
    WANT_WRITE, // wait for the socket to be writable
    CLOSED,     // the peer closed (close_notify or EOF)
    ERROR,      // protocol or socket error: close
  };

  TlsSession(SSL_CTX* ctx, int fd);
  // A client session on an SSL set up by the caller (upstream_tls_context.h), owned from here.
  explicit TlsSession(SSL* client);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  Io handshake();
  bool established() const { return established_; }
  // The ALPN protocol agreed ("h2", "http/1.1"), empty when none.
  std::string_view alpn() const;
  // Reads up to len decrypted bytes into buf; *n is how many when OK.
  Io read(char* buf, size_t len, size_t* n);
  // Writes what it can of q, draining what was written.
  Io write(core::ByteQueue& q);
  // Bytes OpenSSL has decrypted and not yet handed out: read them before waiting on the socket.
  // Bytes OpenSSL holds that the socket will not signal again: decrypted ones, or (with read
  // ahead) records read and not yet processed.
  bool pending() const { return SSL_has_pending(ssl_) == 1; }
  void shutdown();
  // Gives the record buffers back (OpenSSL makes them again for the next record); false, and
  // nothing freed, while they hold bytes not yet read or sent.
  bool release_buffers() { return established_ && SSL_free_buffers(ssl_) == 1; }
  bool resumed() const { return SSL_session_reused(ssl_) != 0; }
  // The session to resume on the next connection (a reference the caller frees), or null.
  SSL_SESSION* resumable_session() const;
  // Why the peer's certificate was refused ("certificate has expired"), or null.
  const char* verify_error() const;
  // Why a handshake failed, for the log: the certificate's fault, OpenSSL's, or the close.
  const char* failure_reason() const;
  // OpenSSL's reason for the last ERROR ("wrong version number"), or null.
  const char* last_error() const { return last_error_; }
  // The handshake failed on an HTTP/1 request line where a ClientHello belonged (OpenSSL
  // recognises "GET ", "POST ", "HEAD " and "PUT "): a client that forgot https://.
  bool plain_http() const { return plain_http_; }

private:
  Io status(int rc);

  SSL* ssl_;
  bool established_ = false;
  bool closed_ = false;
  const char* last_error_ = nullptr; // a static string of OpenSSL's
  bool plain_http_ = false;
};

} // namespace portico::tls
