#pragma once
// A certificate and its private key read from PEM files, for the config check and the TLS
// listeners' SNI entries alike, many at a time (thousands of entries). Keys go through one
// decoder per thread, kept and reused: OpenSSL 3.0 builds a decoder for every
// PEM_read_bio_PrivateKey (~450 µs a key here), the reused one reads a key in ~40 µs.
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <string>

namespace portico::core {

struct PemKeyPair {
  X509* cert = nullptr;             // the file's first certificate; null: none
  STACK_OF(X509) * chain = nullptr; // the certificates after it
  EVP_PKEY* key = nullptr;          // null: none, unreadable, or encrypted (never prompted for)
  bool matched = false;             // key is cert's

  PemKeyPair() = default;
  PemKeyPair(PemKeyPair&& o) noexcept;
  PemKeyPair& operator=(PemKeyPair&& o) noexcept;
  ~PemKeyPair();
};

PemKeyPair read_pem_key_pair(const std::string& cert_file, const std::string& key_file);

// The key in the file, or null as above; the caller frees it with EVP_PKEY_free.
EVP_PKEY* read_pem_private_key(const std::string& path);

} // namespace portico::core
