#include "portico/config_generation.h"

#include "core/error_log.h"
#include "portico/log_file.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace portico::proxy {

core::expected<std::unique_ptr<ConfigGeneration>, std::string>
ConfigGeneration::prepare(std::shared_ptr<const config::Config> cfg, uint64_t id) {
  std::unique_ptr<ConfigGeneration> g(new ConfigGeneration(std::move(cfg), id));
  const config::Config& c = *g->cfg_;
  for (const auto& l : c.listeners) {
    if (!l.tls_enabled) {
      g->tls_.push_back(nullptr);
      continue;
    }
    auto made = tls::TlsContext::create(l.tls);
    if (!made)
      return core::unexpected(c.path + ": listener " + l.address.text + ": " + made.error());
    g->tls_.push_back(std::move(*made));
  }
  for (const auto& l : c.listeners) {
    if (!l.quic.enabled) {
      g->quic_tls_.push_back(nullptr);
      continue;
    }
    auto made = quic::QuicTlsContext::create(l.tls);
    if (!made)
      return core::unexpected(c.path + ": listener " + l.address.text + ": " + made.error());
    g->quic_tls_.push_back(std::move(*made));
  }
  for (const auto& k : c.clusters) {
    if (!k.tls.enabled) {
      g->cluster_tls_.push_back(nullptr);
      continue;
    }
    auto made = tls::UpstreamTlsContext::create(k.tls, k.protocol == config::UpstreamProtocol::H2C);
    if (!made)
      return core::unexpected(c.path + ": cluster " + k.name + " tls: " + made.error());
    g->cluster_tls_.push_back(std::move(*made));
  }
  // Opened once, and shared by the workers (O_APPEND, whole lines).
  for (const auto& l : c.listeners) {
    int fd = -1;
    if (!l.access_log.empty()) {
      fd = open_log_file(l.access_log);
      if (fd < 0)
        return core::unexpected("access log " + l.access_log + ": " + std::strerror(errno));
    }
    g->access_log_fds_.push_back(fd);
  }
  return g;
}

ConfigGeneration::~ConfigGeneration() {
  for (int fd : access_log_fds_)
    if (fd >= 0)
      ::close(fd);
}

int ConfigGeneration::reopen_access_logs() const {
  int reopened = 0;
  for (size_t i = 0; i < access_log_fds_.size(); ++i) {
    if (access_log_fds_[i] < 0)
      continue;
    const std::string& path = cfg_->listeners[i].access_log;
    if (!reopen_log_file(path, access_log_fds_[i])) {
      core::log::write(core::log::Level::ERROR, core::log::Kind::GENERAL,
                       "reopening access log %s: %s; still writing to the old file", path.c_str(),
                       std::strerror(errno));
      continue;
    }
    ++reopened;
  }
  return reopened;
}

} // namespace portico::proxy
