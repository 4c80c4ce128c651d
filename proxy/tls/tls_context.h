#pragma once
// A TLS listener's OpenSSL context: TLS 1.2 and 1.3, the default certificate plus SNI
// certificates (exact or "*.example.com" names), ALPN choosing h2 or http/1.1, and session
// resumption (stateless tickets, and a server-side cache). One context is shared by every
// worker thread: OpenSSL contexts are safe to share once built.
#include "config/config.h"

#include <memory>
#include <openssl/ssl.h>
#include <string>
#include <vector>

namespace portico::tls {

class TlsContext {
public:
  // Loads certificates and keys; on failure returns nullptr with *error naming the file.
  static std::unique_ptr<TlsContext> create(const config::TlsConfig& cfg, std::string* error);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }

  // The SNI name against a certificate pattern: exact, or one leftmost label for "*.".
  static bool name_matches(std::string_view pattern, std::string_view name);

private:
  TlsContext() = default;
  static int servername_cb(SSL* ssl, int* alert, void* arg);
  static int alpn_select_cb(SSL* ssl, const unsigned char** out, unsigned char* outlen,
                            const unsigned char* in, unsigned int inlen, void* arg);

  struct Named {
    std::vector<std::string> names;
    SSL_CTX* ctx;
  };
  SSL_CTX* ctx_ = nullptr;
  std::vector<Named> sni_;
};

} // namespace portico::tls
