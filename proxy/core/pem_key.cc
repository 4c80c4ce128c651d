#include "core/pem_key.h"

#include <openssl/bio.h>
#include <openssl/decoder.h>
#include <openssl/err.h>

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

} // namespace portico::core
