#pragma once
// Session ticket keys of one TLS listener, rotated: a ticket is sealed with the current key
// and opened with the current or the previous one (then renewed), so a client's ticket lives
// for one to two rotation periods and a stolen key opens at most that much traffic. Every
// worker thread's handshakes read the keys; only the main thread's rotate() writes, into the
// one slot of a ring of three that no reader uses, then publishes it: no lock.
#include <array>
#include <atomic>
#include <cstdint>
#include <openssl/ssl.h>

namespace portico::tls {

class TicketKeys {
public:
  TicketKeys();
  // A fresh current key; the current one becomes the previous, the previous is forgotten.
  void rotate();
  // For SSL_CTX_set_tlsext_ticket_key_evp_cb: the TicketKeys object is found through the
  // SSL_CTX's ex_data slot set by install().
  void install(SSL_CTX* ctx);

private:
  struct Key {
    unsigned char name[16];
    unsigned char aes[32];
    unsigned char hmac[32];
  };
  static int callback(SSL* ssl, unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                      EVP_MAC_CTX* mac, int enc);
  int seal_or_open(unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac,
                   bool enc) const;
  static void fill(Key& k);

  std::array<Key, 3> ring_;
  std::atomic<uint32_t> current_{0}; // ring_[current_ % 3]; the previous is current_ - 1
};

} // namespace portico::tls
