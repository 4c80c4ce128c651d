#include "config/sections.h"

#include "core/pem_key_pair.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace portico::config {

namespace {

// OpenSSL judges a cipher string; a context made only for that.
bool ciphers_valid(const std::string& list, bool tls13) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx)
    return true; // cannot tell; the listener's own context will say
  bool ok = tls13 ? SSL_CTX_set_ciphersuites(ctx, list.c_str()) == 1
                  : SSL_CTX_set_cipher_list(ctx, list.c_str()) == 1;
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return ok;
}

} // namespace

void check_key_mode(Reader& r, const toml::node* at, const std::string& file) {
  struct stat st;
  if (at && ::stat(file.c_str(), &st) == 0 && (st.st_mode & (S_IROTH | S_IWOTH)))
    r.warning(at->source(), "private key '" + file + "' is readable by every user; chmod 600 it");
}

void check_key_pair(Reader& r, const toml::node* cert_at, const std::string& cert,
                    const toml::node* key_at, const std::string& key) {
  // Unreadable files are reported already; a pair that cannot be opened is not judged.
  if (!cert_at || !key_at || ::access(cert.c_str(), R_OK) != 0 || ::access(key.c_str(), R_OK) != 0)
    return;
  core::PemKeyPair pair = core::read_pem_key_pair(cert, key);
  if (!pair.cert)
    r.error(cert_at->source(), "certificate '" + cert + "' holds no PEM certificate");
  if (!pair.key)
    r.error(key_at->source(), "private key '" + key +
                                  "' holds no PEM private key (or one encrypted with a "
                                  "passphrase: portico reads unencrypted keys)");
  if (pair.cert && pair.key && !pair.matched)
    r.error(key_at->source(), "private key '" + key + "' is not the key of certificate '" + cert +
                                  "' (they come from different pairs)");
}

void read_tls(Reader& r, const toml::table& t, TlsConfig& tls, const std::string& w) {
  r.only_keys(t,
              {"certificate", "private_key", "sni", "min_version", "ciphers", "ciphersuites",
               "ocsp_staple", "ticket_key_rotation"},
              w);
  std::string min;
  if (r.get_string(t, "min_version", min, w)) {
    if (min == "1.2")
      tls.min_version = TLS1_2_VERSION;
    else if (min == "1.3")
      tls.min_version = TLS1_3_VERSION;
    else
      r.error(t.get("min_version")->source(), w + ": min_version is \"1.2\" or \"1.3\"");
  }
  if (r.get_string(t, "ciphers", tls.ciphers, w) && !ciphers_valid(tls.ciphers, false))
    r.error(t.get("ciphers")->source(),
            w + ": OpenSSL knows no TLS 1.2 cipher in '" + tls.ciphers + "'");
  if (r.get_string(t, "ciphersuites", tls.ciphersuites, w) &&
      !ciphers_valid(tls.ciphersuites, true))
    r.error(t.get("ciphersuites")->source(),
            w + ": '" + tls.ciphersuites + "' is not a list of TLS 1.3 ciphersuites");
  if (r.get_string(t, "ocsp_staple", tls.ocsp_staple, w)) {
    tls.ocsp_staple = r.resolve(tls.ocsp_staple);
    r.readable_file(t.get("ocsp_staple"), tls.ocsp_staple, "OCSP response");
  }
  r.get_number(t, "ticket_key_rotation", tls.ticket_key_rotation, w, 1, 86400 * 7);
  if (r.get_string(t, "certificate", tls.certificate, w, true)) {
    tls.certificate = r.resolve(tls.certificate);
    r.readable_file(t.get("certificate"), tls.certificate, "certificate");
  }
  if (r.get_string(t, "private_key", tls.private_key, w, true)) {
    tls.private_key = r.resolve(tls.private_key);
    r.readable_file(t.get("private_key"), tls.private_key, "private key");
    check_key_mode(r, t.get("private_key"), tls.private_key);
    check_key_pair(r, t.get("certificate"), tls.certificate, t.get("private_key"), tls.private_key);
  }
  for (const toml::table* st : r.get_tables(t, "sni")) {
    SniCertificate sni;
    std::string sw = w + " sni";
    r.only_keys(*st, {"server_names", "certificate", "private_key"}, sw);
    sni.server_names = r.get_strings(*st, "server_names", sw);
    if (sni.server_names.empty())
      r.error(st->source(), sw + ": 'server_names' is required");
    if (r.get_string(*st, "certificate", sni.certificate, sw, true)) {
      sni.certificate = r.resolve(sni.certificate);
      r.readable_file(st->get("certificate"), sni.certificate, "certificate");
    }
    if (r.get_string(*st, "private_key", sni.private_key, sw, true)) {
      sni.private_key = r.resolve(sni.private_key);
      r.readable_file(st->get("private_key"), sni.private_key, "private key");
      check_key_mode(r, st->get("private_key"), sni.private_key);
      check_key_pair(r, st->get("certificate"), sni.certificate, st->get("private_key"),
                     sni.private_key);
    }
    tls.sni.push_back(std::move(sni));
  }
}

} // namespace portico::config
