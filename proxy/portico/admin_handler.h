#pragma once
// The admin endpoint, served on the main thread's own loop so that a scrape never stalls
// traffic: /metrics (Prometheus text), /healthz (alive), /readyz (503 once draining), /status
// (JSON), POST /cache/purge (cache_purge.h), and the live dashboard: / (the page, self-contained)
// and /stats.json (what it draws: the last minutes a second at a time, sampled on this loop once a
// second). The address and the control socket are served alike; admin_guard.h decides who may
// use the paths that change state.
#include "config/config.h"
#include "metrics/live_stats.h"
#include "metrics/worker_metrics.h"
#include "portico/cache_purge.h"
#include "server/exchange.h"

#include <ev.h>
#include <memory>
#include <vector>

namespace portico::proxy {

class ProxyWorker;

class AdminHandler final : public server::RequestHandler {
public:
  // Samples the workers' counters for the dashboard once a second on loop.
  AdminHandler(std::shared_ptr<const config::Config> cfg,
               const std::vector<std::unique_ptr<ProxyWorker>>& workers, double started_at,
               struct ev_loop* loop);
  ~AdminHandler() override;
  AdminHandler(const AdminHandler&) = delete;
  AdminHandler& operator=(const AdminHandler&) = delete;
  void on_request(server::Exchange& ex) override;
  void set_draining() { draining_ = true; }
  // After a reload: the configuration the workers' metrics() are laid out by now.
  void set_config(std::shared_ptr<const config::Config> cfg);

private:
  // Answers 403 (counted, logged) when admin_guard.h refuses ex: true if so.
  bool refuse(server::Exchange& ex);
  static void sample_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void sample();
  std::string status_json(double now) const;
  std::string stats_json(double now, uint64_t since) const;
  static void append_cache_table(std::string& out,
                                 const std::vector<const metrics::WorkerMetrics*>& shards,
                                 bool after_another);
  // Each rate or concurrency limit's counts, and each forward auth's, once there are any.
  static void append_limit_tables(std::string& out);

  std::shared_ptr<const config::Config> cfg_;
  int reloads_ = 0;
  const std::vector<std::unique_ptr<ProxyWorker>>& workers_;
  double started_at_;
  bool draining_ = false;
  struct ev_loop* loop_;
  ev_timer sample_timer_;
  metrics::LiveStats live_;
  CachePurges purges_;
};

} // namespace portico::proxy
