// A server session made from the listeners' context, over a socket pair, against an OpenSSL
// client: what the thread's error queue may hold does not decide how a read or write ends.
#include "tls/tls_context.h"
#include "tls/tls_session.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::tls {
namespace {

// A self-signed P-256 certificate and its key, in files for TlsContext::create.
struct CertificateFiles {
  std::string certificate = "/tmp/portico-tls-session-cert-XXXXXX";
  std::string key = "/tmp/portico-tls-session-key-XXXXXX";

  CertificateFiles() {
    EVP_PKEY* pkey = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    X509* x = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pkey);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509_sign(x, pkey, EVP_sha256());
    write(certificate, [&](BIO* b) { PEM_write_bio_X509(b, x); });
    write(key, [&](BIO* b) {
      PEM_write_bio_PrivateKey(b, pkey, nullptr, nullptr, 0, nullptr, nullptr);
    });
    X509_free(x);
    EVP_PKEY_free(pkey);
  }
  ~CertificateFiles() {
    std::remove(certificate.c_str());
    std::remove(key.c_str());
  }
  template <typename F> static void write(std::string& path, F f) {
    int fd = mkstemp(path.data());
    close(fd);
    BIO* b = BIO_new_file(path.c_str(), "w");
    f(b);
    BIO_free(b);
  }
};

class TlsSessionTest : public ::testing::Test {
protected:
  void SetUp() override {
    config::TlsConfig cfg;
    cfg.certificate = files_.certificate;
    cfg.private_key = files_.key;
    auto ctx = TlsContext::create(cfg);
    ASSERT_TRUE(ctx) << ctx.error();
    server_ctx_ = std::move(*ctx);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds_), 0);
    server_ = std::make_unique<TlsSession>(server_ctx_->get(), fds_[0]);
    client_ctx_ = SSL_CTX_new(TLS_client_method());
    client_ = SSL_new(client_ctx_);
    SSL_set_fd(client_, fds_[1]);
    SSL_set_connect_state(client_);
    for (int i = 0; i < 100 && !server_->established(); ++i) {
      SSL_do_handshake(client_);
      ASSERT_NE(server_->handshake(), TlsSession::Io::ERROR);
    }
    ASSERT_TRUE(server_->established());
    ASSERT_EQ(SSL_do_handshake(client_), 1);
  }
  void TearDown() override {
    SSL_free(client_);
    SSL_CTX_free(client_ctx_);
    server_.reset();
    close(fds_[0]);
    close(fds_[1]);
    ERR_clear_error();
  }
  // An error some other code on this thread raised and left queued.
  static void leave_a_stale_error() {
    ERR_raise(ERR_LIB_SSL, SSL_R_BAD_LENGTH);
    ASSERT_NE(ERR_peek_error(), 0u);
  }

  CertificateFiles files_;
  std::unique_ptr<TlsContext> server_ctx_;
  int fds_[2] = {-1, -1};
  std::unique_ptr<TlsSession> server_;
  SSL_CTX* client_ctx_ = nullptr;
  SSL* client_ = nullptr;
};

TEST_F(TlsSessionTest, AStaleErrorDoesNotTurnANothingToReadIntoAFailure) {
  leave_a_stale_error();
  char buf[64];
  size_t n = 0;
  EXPECT_EQ(server_->read(buf, sizeof buf, &n), TlsSession::Io::WANT_READ);
  EXPECT_EQ(ERR_peek_error(), 0u); // cleared, not left for the next call
}

TEST_F(TlsSessionTest, AStaleErrorDoesNotStopAReadOrAWrite) {
  ASSERT_EQ(SSL_write(client_, "ping", 4), 4);
  leave_a_stale_error();
  char buf[64];
  size_t n = 0;
  ASSERT_EQ(server_->read(buf, sizeof buf, &n), TlsSession::Io::OK);
  EXPECT_EQ(std::string(buf, n), "ping");
  leave_a_stale_error();
  core::ByteQueue out;
  out.append("pong");
  EXPECT_EQ(server_->write(out), TlsSession::Io::OK);
  EXPECT_TRUE(out.empty());
}

} // namespace
} // namespace portico::tls
