#include "tls/tls_context.h"

#include "core/pem_key_pair.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <openssl/err.h>

namespace portico::tls {

namespace {

std::string openssl_error() {
  unsigned long e = ERR_get_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

// ALPN protocols we speak, in wire format, best first.
constexpr unsigned char kAlpn[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

} // namespace

core::expected<SSL_CTX*, std::string> TlsContext::new_ctx(const config::TlsConfig& cfg) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) {
    return core::unexpected("SSL_CTX_new: " + openssl_error());
  }
  SSL_CTX_set_min_proto_version(ctx, cfg.min_version);
  if (SSL_CTX_set_cipher_list(ctx, cfg.ciphers.c_str()) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, cfg.ciphersuites.c_str()) != 1) {
    std::string why = "ciphers: " + openssl_error();
    SSL_CTX_free(ctx);
    return core::unexpected(why);
  }
  // RFC 9113 9.2: no compression, no renegotiation; these also suit HTTP/1.1.
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  // No SSL_MODE_RELEASE_BUFFERS: it frees and re-allocates the 17 KiB record buffers around
  // every record, about 1,300 instructions per HTTP/1.1 request. A connection gives them back
  // once it is quiet instead (ClientConnection::rest_tls).
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Read ahead: one read(2) takes what the socket holds, where OpenSSL otherwise reads each
  // record's 5-byte header and then its body (two syscalls per request on HTTP/1.1).
  // TlsSession::pending() counts what it buffered, so nothing waits for a socket event.
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
  SSL_CTX_sess_set_cache_size(ctx, 20480);
  static const unsigned char kSessionContext[] = "portico";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
  if (SSL_CTX_use_certificate_chain_file(ctx, cfg.certificate.c_str()) != 1) {
    std::string why = cfg.certificate + ": " + openssl_error();
    SSL_CTX_free(ctx);
    return core::unexpected(why);
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, cfg.private_key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    std::string why = cfg.private_key + ": " + openssl_error();
    SSL_CTX_free(ctx);
    return core::unexpected(why);
  }
  tickets_.install(ctx);
  if (!ocsp_.empty()) {
    SSL_CTX_set_tlsext_status_cb(ctx, ocsp_cb);
    SSL_CTX_set_tlsext_status_arg(ctx, this);
  }
  return ctx;
}

bool TlsContext::h2_allows(const SSL_CIPHER* c) {
  if (!c)
    return false;
  if (SSL_CIPHER_get_protocol_id(c) >> 8 == 0x13)
    return true; // a TLS 1.3 suite
  int kx = SSL_CIPHER_get_kx_nid(c);
  return SSL_CIPHER_is_aead(c) && (kx == NID_kx_ecdhe || kx == NID_kx_dhe);
}

core::expected<std::unique_ptr<TlsContext>, std::string>
TlsContext::create(const config::TlsConfig& cfg) {
  std::unique_ptr<TlsContext> t(new TlsContext);
  if (!cfg.ocsp_staple.empty()) {
    std::ifstream in(cfg.ocsp_staple, std::ios::binary);
    t->ocsp_.assign(std::istreambuf_iterator<char>(in), {});
    if (!in.good() && !in.eof())
      return core::unexpected(cfg.ocsp_staple + ": cannot be read");
    if (t->ocsp_.empty())
      return core::unexpected(cfg.ocsp_staple + ": empty OCSP response");
  }
  auto made = t->new_ctx(cfg);
  if (!made)
    return core::unexpected(made.error());
  t->ctx_ = *made;
  t->default_cert_ = SSL_CTX_get0_certificate(t->ctx_);
  for (const auto& s : cfg.sni) {
    core::PemKeyPair id = core::read_pem_key_pair(s.certificate, s.private_key);
    if (!id.cert)
      return core::unexpected(s.certificate + ": no PEM certificate");
    if (!id.matched)
      return core::unexpected(s.private_key + ": " +
                              (id.key ? "not the key of " + s.certificate : "no PEM private key"));
    for (const auto& name : s.server_names)
      t->sni_names_.add(name, t->sni_.size());
    t->sni_.push_back(std::move(id));
  }
  SSL_CTX_set_alpn_select_cb(t->ctx_, alpn_select_cb, t.get());
  SSL_CTX_set_tlsext_servername_callback(t->ctx_, servername_cb);
  SSL_CTX_set_tlsext_servername_arg(t->ctx_, t.get());
  return t;
}

TlsContext::~TlsContext() {
  SSL_CTX_free(ctx_);
}

int TlsContext::servername_cb(SSL* ssl, int*, void* arg) {
  auto* self = static_cast<TlsContext*>(arg);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (!name)
    return SSL_TLSEXT_ERR_OK; // no SNI: the default certificate
  if (size_t i = self->sni_names_.find(name); i != SniNames::kNone) {
    const core::PemKeyPair& id = self->sni_[i];
    // Only this entry's: left beside it, a default of another key type (RSA beside ECDSA)
    // could still be chosen. Up-references, no copies: handshakes share what was loaded.
    SSL_certs_clear(ssl);
    if (SSL_use_cert_and_key(ssl, id.cert, id.key, id.chain, 1) != 1) {
      ERR_clear_error();
      return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
  }
  return SSL_TLSEXT_ERR_OK;
}

int TlsContext::alpn_select_cb(SSL* ssl, const unsigned char** out, unsigned char* outlen,
                               const unsigned char* in, unsigned int inlen, void*) {
  unsigned char* sel = nullptr;
  // The cipher is chosen by now (OpenSSL selects ALPN after it): one h2 may not use leaves
  // HTTP/1.1 only.
  bool h2 = SSL_version(ssl) >= TLS1_3_VERSION || h2_allows(SSL_get_pending_cipher(ssl));
  const unsigned char* ours = h2 ? kAlpn : kAlpn + 3;
  unsigned int ours_len = h2 ? sizeof kAlpn : sizeof kAlpn - 3;
  if (SSL_select_next_proto(&sel, outlen, ours, ours_len, in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK; // a client offering neither: go on without ALPN (HTTP/1.1)
  *out = sel;
  return SSL_TLSEXT_ERR_OK;
}

int TlsContext::ocsp_cb(SSL* ssl, void* arg) {
  auto* self = static_cast<TlsContext*>(arg);
  // The response vouches for the default certificate alone.
  if (SSL_get_certificate(ssl) != self->default_cert_)
    return SSL_TLSEXT_ERR_NOACK;
  const std::string& der = self->ocsp_;
  // OpenSSL takes ownership of the copy.
  auto* copy = static_cast<unsigned char*>(OPENSSL_malloc(der.size()));
  if (!copy)
    return SSL_TLSEXT_ERR_NOACK;
  std::memcpy(copy, der.data(), der.size());
  SSL_set_tlsext_status_ocsp_resp(ssl, copy, static_cast<long>(der.size()));
  return SSL_TLSEXT_ERR_OK;
}

} // namespace portico::tls
