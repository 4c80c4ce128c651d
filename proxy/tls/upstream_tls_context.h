#pragma once
// The client side of TLS to a cluster's endpoints: one OpenSSL context per cluster, made on the
// main thread from [[cluster]] tls and shared (SSL_CTX is reference counted and safe to share)
// by every worker's connections to it. Verification against the CA bundle (or the system's)
// and the name, a client certificate for mTLS, ALPN to match the cluster's protocol, and a
// client session cache so that a new connection resumes the last one's session.
#include "config/config.h"
#include "core/expected.h"

#include <memory>
#include <openssl/ssl.h>
#include <string>

namespace portico::tls {

class UpstreamTlsContext {
public:
  static core::expected<std::unique_ptr<UpstreamTlsContext>, std::string>
  create(const config::ClusterTlsConfig& cfg, bool h2);
  ~UpstreamTlsContext() { SSL_CTX_free(ctx_); }
  UpstreamTlsContext(const UpstreamTlsContext&) = delete;
  UpstreamTlsContext& operator=(const UpstreamTlsContext&) = delete;
  SSL_CTX* get() const { return ctx_; }

private:
  explicit UpstreamTlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// A client SSL on fd for one connection: SNI and the name to verify (an IP address is checked
// as one), the session to resume if any. Null on OpenSSL's failure.
SSL* new_client_ssl(SSL_CTX* ctx, int fd, const std::string& server_name, bool verify,
                    SSL_SESSION* resume);

} // namespace portico::tls
