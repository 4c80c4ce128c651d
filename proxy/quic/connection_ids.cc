#include "quic/connection_ids.h"

#include <cstdlib>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

namespace portico::quic {

void random_bytes(uint8_t* out, size_t n) {
  if (gnutls_rnd(GNUTLS_RND_NONCE, out, n) != 0)
    std::abort(); // GnuTLS's generator failing is no state to serve TLS in
}

void secret_bytes(uint8_t* out, size_t n) {
  if (gnutls_rnd(GNUTLS_RND_KEY, out, n) != 0)
    std::abort();
}

QuicSecret::QuicSecret() {
  secret_bytes(bytes_.data(), bytes_.size());
}

ngtcp2_cid new_cid(uint8_t worker) {
  ngtcp2_cid c;
  c.datalen = kCidLength;
  c.data[0] = worker;
  random_bytes(c.data + 1, kCidLength - 1);
  return c;
}

} // namespace portico::quic
