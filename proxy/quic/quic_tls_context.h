#pragma once
// A QUIC listener's TLS: GnuTLS credentials made from the TCP listener's certificate files
// (the default one and each SNI one: GnuTLS picks by the client's server name), a session
// ticket key, and ALPN h3. Read-only once made, so the workers share it.
#include "config/config.h"
#include "core/expected.h"

#include <gnutls/gnutls.h>
#include <memory>
#include <ngtcp2/ngtcp2_crypto.h>
#include <string>

namespace portico::quic {

class QuicTlsContext {
public:
  static core::expected<std::unique_ptr<QuicTlsContext>, std::string>
  create(const config::TlsConfig& tls);
  ~QuicTlsContext();
  QuicTlsContext(const QuicTlsContext&) = delete;
  QuicTlsContext& operator=(const QuicTlsContext&) = delete;

  // A server session for one QUIC connection, set up for ngtcp2 (its crypto callbacks find the
  // connection through ref); null on failure.
  gnutls_session_t new_session(ngtcp2_crypto_conn_ref* ref) const;

private:
  QuicTlsContext() = default;
  gnutls_certificate_credentials_t cred_ = nullptr;
  gnutls_priority_t priority_ = nullptr;
  gnutls_datum_t ticket_key_{nullptr, 0};
};

} // namespace portico::quic
