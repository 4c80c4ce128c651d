#include "tls/upstream_tls_context.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

namespace portico::tls {

namespace {
std::string openssl_error(const std::string& what) {
  char buf[256] = "unknown error";
  if (unsigned long e = ERR_get_error())
    ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return what + ": " + buf;
}
} // namespace

core::expected<std::unique_ptr<UpstreamTlsContext>, std::string>
UpstreamTlsContext::create(const config::ClusterTlsConfig& cfg, bool h2) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx)
    return core::unexpected(openssl_error("SSL_CTX_new"));
  std::unique_ptr<UpstreamTlsContext> out(new UpstreamTlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // OpenSSL 3 calls an EOF without close_notify an error; servers send it that way all the
  // time (an idle close, the end of a close-delimited body): an EOF it is.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (cfg.verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    bool loaded = cfg.ca.empty() ? SSL_CTX_set_default_verify_paths(ctx) == 1
                                 : SSL_CTX_load_verify_locations(ctx, cfg.ca.c_str(), nullptr) == 1;
    if (!loaded)
      return core::unexpected(
          openssl_error(cfg.ca.empty() ? "the system's CA certificates" : "CA bundle " + cfg.ca));
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (!cfg.certificate.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg.certificate.c_str()) != 1)
      return core::unexpected(openssl_error("client certificate " + cfg.certificate));
    if (SSL_CTX_use_PrivateKey_file(ctx, cfg.private_key.c_str(), SSL_FILETYPE_PEM) != 1)
      return core::unexpected(openssl_error("client private key " + cfg.private_key));
    if (SSL_CTX_check_private_key(ctx) != 1)
      return core::unexpected(openssl_error("client certificate and key"));
  }
  static const unsigned char kH2[] = "\x02h2";
  static const unsigned char kH1[] = "\x08http/1.1";
  if (h2)
    SSL_CTX_set_alpn_protos(ctx, kH2, sizeof kH2 - 1);
  else
    SSL_CTX_set_alpn_protos(ctx, kH1, sizeof kH1 - 1);
  // Sessions are kept by the pools (one per endpoint), not in OpenSSL's internal cache.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  return out;
}

SSL* new_client_ssl(SSL_CTX* ctx, int fd, const std::string& server_name, bool verify,
                    SSL_SESSION* resume) {
  SSL* ssl = SSL_new(ctx);
  if (!ssl)
    return nullptr;
  SSL_set_fd(ssl, fd);
  SSL_set_connect_state(ssl);
  unsigned char ip[16];
  bool is_ip = inet_pton(AF_INET, server_name.c_str(), ip) == 1 ||
               inet_pton(AF_INET6, server_name.c_str(), ip) == 1;
  // SNI carries names only (RFC 6066 3).
  if (!is_ip && !server_name.empty())
    SSL_set_tlsext_host_name(ssl, server_name.c_str());
  if (verify && !server_name.empty()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    if (is_ip)
      X509_VERIFY_PARAM_set1_ip_asc(param, server_name.c_str());
    else
      SSL_set1_host(ssl, server_name.c_str());
  }
  if (resume)
    SSL_set_session(ssl, resume);
  return ssl;
}

} // namespace portico::tls
