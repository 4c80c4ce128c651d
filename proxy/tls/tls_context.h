#pragma once
// A TLS listener's OpenSSL context: TLS 1.2 and 1.3, the default certificate plus SNI
// certificates (exact or "*.example.com" names), ALPN choosing h2 or http/1.1, and session
// resumption (stateless tickets, and a server-side cache). One context is shared by every
// worker thread: OpenSSL contexts are safe to share once built. An SNI entry is not a context
// of its own but a certificate, its chain and its key, set on the handshake that names it
// (SSL_use_cert_and_key): an SSL_CTX costs OpenSSL 3 a millisecond and ~20 KB to make, so
// 10,000 of them took 15 s and 200 MB.
#include "config/config.h"
#include "tls/sni_names.h"
#include "tls/ticket_keys.h"

#include "core/expected.h"
#include "core/pem_key_pair.h"
#include <memory>
#include <openssl/ssl.h>
#include <string>
#include <vector>

namespace portico::tls {

class TlsContext {
public:
  // Loads certificates and keys, or says which file failed and why.
  static core::expected<std::unique_ptr<TlsContext>, std::string>
  create(const config::TlsConfig& cfg);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }
  // From the main thread, every ticket_key_rotation seconds.
  void rotate_ticket_keys() { tickets_.rotate(); }

  // RFC 9113 9.2.2: h2 over TLS 1.2 only with an ephemeral key exchange and an AEAD cipher
  // (everything else is Appendix A's blocklist).
  static bool h2_allows(const SSL_CIPHER* cipher);

private:
  TlsContext() = default;
  static int servername_cb(SSL* ssl, int* alert, void* arg);
  static int alpn_select_cb(SSL* ssl, const unsigned char** out, unsigned char* outlen,
                            const unsigned char* in, unsigned int inlen, void* arg);
  static int ocsp_cb(SSL* ssl, void* arg);
  core::expected<SSL_CTX*, std::string> new_ctx(const config::TlsConfig& cfg);

  SSL_CTX* ctx_ = nullptr;
  X509* default_cert_ = nullptr;      // the one ocsp_ is about (owned by ctx_)
  std::vector<core::PemKeyPair> sni_; // one per [[...tls.sni]] entry, in order
  SniNames sni_names_;                // to an index into sni_
  TicketKeys tickets_;
  std::string ocsp_; // the DER response stapled when a client asks, "" for none
};

} // namespace portico::tls
