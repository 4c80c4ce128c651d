#include "tls/ticket_keys.h"

#include <cstring>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

namespace portico::tls {

namespace {
int ex_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}
} // namespace

void TicketKeys::fill(Key& k) {
  RAND_bytes(k.name, sizeof k.name);
  RAND_bytes(k.aes, sizeof k.aes);
  RAND_bytes(k.hmac, sizeof k.hmac);
}

TicketKeys::TicketKeys() {
  for (Key& k : ring_)
    fill(k);
  current_.store(1, std::memory_order_release); // ring_[0] stands in as the "previous" key
}

void TicketKeys::rotate() {
  uint32_t next = current_.load(std::memory_order_relaxed) + 1;
  fill(ring_[next % 3]); // neither the current nor the previous key: no reader is using it
  current_.store(next, std::memory_order_release);
}

void TicketKeys::install(SSL_CTX* ctx) {
  SSL_CTX_set_ex_data(ctx, ex_index(), this);
  SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, callback);
}

int TicketKeys::callback(SSL* ssl, unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                         EVP_MAC_CTX* mac, int enc) {
  auto* self =
      static_cast<const TicketKeys*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ex_index()));
  return self ? self->seal_or_open(name, iv, cipher, mac, enc == 1) : -1;
}

// 1: done with the current key; 2: opened with the previous key (OpenSSL then issues a new
// ticket); 0: a key we no longer have (a full handshake follows); -1: failure.
int TicketKeys::seal_or_open(unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                             EVP_MAC_CTX* mac, bool enc) const {
  uint32_t cur = current_.load(std::memory_order_acquire);
  const Key* key = &ring_[cur % 3];
  int found = 1;
  if (enc) {
    std::memcpy(name, key->name, sizeof key->name);
    if (RAND_bytes(iv, EVP_MAX_IV_LENGTH) != 1)
      return -1;
  } else if (std::memcmp(name, key->name, sizeof key->name) != 0) {
    key = &ring_[(cur + 2) % 3];
    if (std::memcmp(name, key->name, sizeof key->name) != 0)
      return 0;
    found = 2;
  }
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(key->hmac),
                                        sizeof key->hmac),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
      OSSL_PARAM_construct_end()};
  if (EVP_MAC_CTX_set_params(mac, params) != 1)
    return -1;
  int ok = enc ? EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, key->aes, iv)
               : EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, key->aes, iv);
  return ok == 1 ? found : -1;
}

} // namespace portico::tls
