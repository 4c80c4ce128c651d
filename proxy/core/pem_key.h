#pragma once
// Private keys read from PEM files, many at a time (thousands of SNI entries): OpenSSL 3.0
// builds a decoder for every PEM_read_bio_PrivateKey (~450 µs a key here); one decoder per
// thread, kept and reused, reads a key in ~40 µs.
#include <openssl/evp.h>
#include <string>

namespace portico::core {

// The key in the file, or null (none, unreadable, or encrypted: no passphrase is ever asked
// for). The caller frees it with EVP_PKEY_free.
EVP_PKEY* read_pem_private_key(const std::string& path);

} // namespace portico::core
