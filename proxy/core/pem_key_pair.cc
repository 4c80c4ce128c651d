#include "core/pem_key_pair.h"

#include <openssl/bio.h>
#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <utility>

namespace portico::core {

namespace {

// No passphrase: an encrypted key fails rather than prompting on a terminal.
int no_passphrase(char*, size_t, size_t*, const OSSL_PARAM[], void*) {
  return 0;
}

struct Decoder {
  EVP_PKEY* out = nullptr; // where the decoder puts each key it reads
  OSSL_DECODER_CTX* ctx = nullptr;
  Decoder() {
    ctx = OSSL_DECODER_CTX_new_for_pkey(&out, "PEM", nullptr, nullptr, 0, nullptr, nullptr);
    if (ctx)
      OSSL_DECODER_CTX_set_passphrase_cb(ctx, no_passphrase, nullptr);
  }
  ~Decoder() { OSSL_DECODER_CTX_free(ctx); }
};

} // namespace

EVP_PKEY* read_pem_private_key(const std::string& path) {
  thread_local Decoder d;
  BIO* b = BIO_new_file(path.c_str(), "r");
  if (!b || !d.ctx) {
    BIO_free(b);
    ERR_clear_error();
    return nullptr;
  }
  d.out = nullptr;
  if (OSSL_DECODER_from_bio(d.ctx, b) != 1) {
    EVP_PKEY_free(d.out);
    d.out = nullptr;
  }
  BIO_free(b);
  ERR_clear_error();
  EVP_PKEY* key = d.out;
  d.out = nullptr;
  return key;
}

PemKeyPair::PemKeyPair(PemKeyPair&& o) noexcept
    : cert(std::exchange(o.cert, nullptr)), chain(std::exchange(o.chain, nullptr)),
      key(std::exchange(o.key, nullptr)), matched(o.matched) {}

PemKeyPair& PemKeyPair::operator=(PemKeyPair&& o) noexcept {
  std::swap(cert, o.cert);
  std::swap(chain, o.chain);
  std::swap(key, o.key);
  matched = o.matched;
  return *this;
}

PemKeyPair::~PemKeyPair() {
  X509_free(cert);
  sk_X509_pop_free(chain, X509_free);
  EVP_PKEY_free(key);
}

PemKeyPair read_pem_key_pair(const std::string& cert_file, const std::string& key_file) {
  PemKeyPair p;
  if (BIO* b = BIO_new_file(cert_file.c_str(), "r")) {
    p.cert = PEM_read_bio_X509_AUX(b, nullptr, nullptr, nullptr);
    p.chain = sk_X509_new_null();
    while (X509* ca = PEM_read_bio_X509(b, nullptr, nullptr, nullptr))
      sk_X509_push(p.chain, ca);
    BIO_free(b);
  }
  p.key = read_pem_private_key(key_file);
  p.matched = p.cert && p.key && X509_check_private_key(p.cert, p.key) == 1;
  ERR_clear_error(); // the end of the certificate file reads as "no start line"
  return p;
}

} // namespace portico::core
