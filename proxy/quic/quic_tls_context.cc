#include "quic/quic_tls_context.h"

#include <cstring>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

namespace portico::quic {

namespace {
constexpr unsigned char kH3[] = "h3";

// TLS 1.3 only (QUIC has no other), its AEADs, and no middlebox compatibility mode (RFC 9001
// 8.4: no ChangeCipherSpec in QUIC).
constexpr const char* kPriority =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"
    "+AES-256-GCM:+CHACHA20-POLY1305:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"
    "+GROUP-SECP384R1";

std::string gnutls_error(const std::string& what, int rv) {
  return what + ": " + gnutls_strerror(rv);
}

// A client offering no h3 gets no connection (RFC 9001 8.1: no_application_protocol).
int check_alpn(gnutls_session_t session, unsigned int, unsigned, unsigned int,
               const gnutls_datum_t*) {
  gnutls_datum_t alpn;
  if (gnutls_alpn_get_selected_protocol(session, &alpn) != 0 || alpn.size != 2 ||
      std::memcmp(alpn.data, kH3, 2) != 0)
    return GNUTLS_E_NO_APPLICATION_PROTOCOL;
  return 0;
}
} // namespace

core::expected<std::unique_ptr<QuicTlsContext>, std::string>
QuicTlsContext::create(const config::TlsConfig& tls) {
  std::unique_ptr<QuicTlsContext> c(new QuicTlsContext);
  if (int rv = gnutls_certificate_allocate_credentials(&c->cred_); rv != 0)
    return core::unexpected(gnutls_error("quic: credentials", rv));
  auto add = [&](const std::string& cert, const std::string& key) -> std::string {
    int rv = gnutls_certificate_set_x509_key_file(c->cred_, cert.c_str(), key.c_str(),
                                                  GNUTLS_X509_FMT_PEM);
    return rv < 0 ? gnutls_error("quic: certificate " + cert, rv) : std::string();
  };
  if (auto why = add(tls.certificate, tls.private_key); !why.empty())
    return core::unexpected(why);
  for (const auto& s : tls.sni)
    if (auto why = add(s.certificate, s.private_key); !why.empty())
      return core::unexpected(why);
  if (int rv = gnutls_priority_init(&c->priority_, kPriority, nullptr); rv != 0)
    return core::unexpected(gnutls_error("quic: priority", rv));
  if (int rv = gnutls_session_ticket_key_generate(&c->ticket_key_); rv != 0)
    return core::unexpected(gnutls_error("quic: ticket key", rv));
  return c;
}

QuicTlsContext::~QuicTlsContext() {
  if (ticket_key_.data)
    gnutls_free(ticket_key_.data);
  if (priority_)
    gnutls_priority_deinit(priority_);
  if (cred_)
    gnutls_certificate_free_credentials(cred_);
}

gnutls_session_t QuicTlsContext::new_session(ngtcp2_crypto_conn_ref* ref) const {
  gnutls_session_t s = nullptr;
  // No early data: 0-RTT requests could be replayed, and are off (RFC 9001 9.2).
  if (gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NO_AUTO_SEND_TICKET | GNUTLS_NO_END_OF_EARLY_DATA) !=
      0)
    return nullptr;
  gnutls_datum_t alpn{const_cast<unsigned char*>(kH3), 2};
  if (gnutls_priority_set(s, priority_) != 0 ||
      gnutls_session_ticket_enable_server(s, &ticket_key_) != 0 ||
      ngtcp2_crypto_gnutls_configure_server_session(s) != 0 ||
      gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred_) != 0 ||
      gnutls_alpn_set_protocols(s, &alpn, 1,
                                GNUTLS_ALPN_MANDATORY | GNUTLS_ALPN_SERVER_PRECEDENCE) != 0) {
    gnutls_deinit(s);
    return nullptr;
  }
  gnutls_handshake_set_hook_function(s, GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_POST,
                                     check_alpn);
  gnutls_session_set_ptr(s, ref);
  return s;
}

} // namespace portico::quic
