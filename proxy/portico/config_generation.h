#pragma once
// A loaded configuration as the main thread holds it while any worker still runs it: the
// configuration, its listeners' TLS contexts (certificates read at load) and its access log
// files. Made at start and on every reload; freed once every worker has retired it.
#include "config/config.h"
#include "core/expected.h"
#include "quic/quic_tls_context.h"
#include "tls/tls_context.h"
#include "tls/upstream_tls_context.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace portico::proxy {

class ConfigGeneration {
public:
  // Reads the certificates and opens the access logs; the error names the listener.
  static core::expected<std::unique_ptr<ConfigGeneration>, std::string>
  prepare(std::shared_ptr<const config::Config> cfg, uint64_t id);
  ~ConfigGeneration();
  ConfigGeneration(const ConfigGeneration&) = delete;
  ConfigGeneration& operator=(const ConfigGeneration&) = delete;

  uint64_t id() const { return id_; }
  const config::Config& config() const { return *cfg_; }
  const std::shared_ptr<const config::Config>& shared_config() const { return cfg_; }
  // Per listener: its TLS context, or null for cleartext.
  tls::TlsContext* tls(size_t listener) const { return tls_[listener].get(); }
  // Per listener: its QUIC TLS context (GnuTLS), or null without quic. Shared: a QUIC
  // connection keeps the one it began with, past this generation.
  const std::shared_ptr<const quic::QuicTlsContext>& quic_tls(size_t listener) const {
    return quic_tls_[listener];
  }
  // Per cluster: its TLS client context, or null.
  SSL_CTX* cluster_tls(size_t cluster) const {
    return cluster_tls_[cluster] ? cluster_tls_[cluster]->get() : nullptr;
  }
  // Per listener: its access log file, or -1.
  const std::vector<int>& access_log_fds() const { return access_log_fds_; }
  // USR1 after logrotate's rename: how many were reopened; the others are logged.
  int reopen_access_logs() const;

  // Workers that still run this generation (the supervisor's count).
  int workers_running = 0;
  int workers_applied = 0;

private:
  ConfigGeneration(std::shared_ptr<const config::Config> cfg, uint64_t id)
      : cfg_(std::move(cfg)), id_(id) {}

  std::shared_ptr<const config::Config> cfg_;
  uint64_t id_;
  std::vector<std::unique_ptr<tls::TlsContext>> tls_;
  std::vector<std::shared_ptr<const quic::QuicTlsContext>> quic_tls_;
  std::vector<std::unique_ptr<tls::UpstreamTlsContext>> cluster_tls_;
  std::vector<int> access_log_fds_;
};

} // namespace portico::proxy
