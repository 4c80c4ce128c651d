#pragma once
// portico-backend's live dashboard: the master samples its workers' slots (the same table
// /metrics sums) once a second on its loop and answers /stats.json for the page at /, which
// is portico's own (metrics/dashboard.html): groups are the apps, the tables its workers.
#include "backend_metrics.h"
#include "metrics/live_stats.h"
#include "metrics_exposition.h"

#include <ev.h>
#include <functional>
#include <string>
#include <vector>

namespace portico::backend {

class MasterDashboard {
public:
  // One live worker as the master knows it, for the workers table.
  struct Worker {
    long pid;
    unsigned generation;
    double age_seconds;
    int64_t in_flight;
  };
  // What the master reports at the moment of a request: its supervision counts and workers.
  using State = std::function<void(SupervisionStats&, std::vector<Worker>&)>;

  MasterDashboard(struct ev_loop* loop, const BackendMetrics& metrics, State state,
                  double started_at);
  ~MasterDashboard();
  MasterDashboard(const MasterDashboard&) = delete;
  MasterDashboard& operator=(const MasterDashboard&) = delete;

  std::string stats_json(uint64_t since, bool draining) const;

private:
  static void sample_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void sample();

  struct ev_loop* loop_;
  const BackendMetrics& metrics_;
  State state_;
  double started_at_;
  ev_timer timer_;
  metrics::LiveStats live_;
};

} // namespace portico::backend
