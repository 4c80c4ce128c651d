// Keys through the one reused decoder: each kind of PEM key file, one after another (the
// decoder is reused, so one read must not leak into the next), and an encrypted key refused
// without asking for a passphrase.
#include "core/pem_key_pair.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>

#include <cstdio>
#include <string>
#include <unistd.h>

namespace portico::core {
namespace {

struct KeyFile {
  std::string path;
  explicit KeyFile(EVP_PKEY* key, bool traditional = false, const char* passphrase = nullptr) {
    char name[] = "/tmp/portico-pem-key-XXXXXX";
    int fd = mkstemp(name);
    close(fd);
    path = name;
    BIO* b = BIO_new_file(name, "w");
    if (passphrase)
      PEM_write_bio_PKCS8PrivateKey(b, key, EVP_aes_128_cbc(), passphrase,
                                    static_cast<int>(std::char_traits<char>::length(passphrase)),
                                    nullptr, nullptr);
    else if (traditional)
      PEM_write_bio_PrivateKey_traditional(b, key, nullptr, nullptr, 0, nullptr, nullptr);
    else
      PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
    BIO_free(b);
  }
  ~KeyFile() { std::remove(path.c_str()); }
};

TEST(PemKey, EveryKindOfKeyFileInTurn) {
  EVP_PKEY* ec = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  EVP_PKEY* rsa = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048});
  ASSERT_TRUE(ec && rsa);
  KeyFile ec_pkcs8(ec), ec_traditional(ec, true), rsa_pkcs8(rsa), rsa_traditional(rsa, true);
  for (int round = 0; round < 2; ++round)
    for (auto [file, want] : {std::pair{&ec_pkcs8, ec}, std::pair{&ec_traditional, ec},
                              std::pair{&rsa_pkcs8, rsa}, std::pair{&rsa_traditional, rsa}}) {
      EVP_PKEY* got = read_pem_private_key(file->path);
      ASSERT_NE(got, nullptr) << file->path;
      EXPECT_EQ(EVP_PKEY_eq(got, want), 1) << file->path;
      EVP_PKEY_free(got);
    }
  KeyFile encrypted(ec, false, "secret");
  EXPECT_EQ(read_pem_private_key(encrypted.path), nullptr);
  EXPECT_EQ(read_pem_private_key("/nonexistent/key.pem"), nullptr);
  // A refusal leaves the decoder good for the next key.
  EVP_PKEY* again = read_pem_private_key(ec_pkcs8.path);
  EXPECT_NE(again, nullptr);
  EVP_PKEY_free(again);
  EVP_PKEY_free(ec);
  EVP_PKEY_free(rsa);
}

} // namespace
} // namespace portico::core
