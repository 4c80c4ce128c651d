#pragma once
// The admin endpoint, served on the main thread's own loop so that a scrape never stalls
// traffic: /metrics (Prometheus text), /healthz (alive), /readyz (503 once draining), /status
// (JSON).
#include "config/config.h"
#include "server/exchange.h"

#include <memory>
#include <vector>

namespace portico::proxy {

class ProxyWorker;

class AdminHandler final : public server::RequestHandler {
public:
  AdminHandler(std::shared_ptr<const config::Config> cfg,
               const std::vector<std::unique_ptr<ProxyWorker>>& workers, double started_at);
  void on_request(server::Exchange& ex) override;
  void set_draining() { draining_ = true; }
  // After a reload: the configuration the workers' metrics() are laid out by now.
  void set_config(std::shared_ptr<const config::Config> cfg);

private:
  std::string status_json(double now) const;

  std::shared_ptr<const config::Config> cfg_;
  int reloads_ = 0;
  const std::vector<std::unique_ptr<ProxyWorker>>& workers_;
  double started_at_;
  bool draining_ = false;
};

} // namespace portico::proxy
