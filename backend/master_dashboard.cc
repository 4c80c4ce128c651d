#include "master_dashboard.h"

#include "core/json_escape.h"

#include <unistd.h>

namespace portico::backend {

MasterDashboard::MasterDashboard(struct ev_loop* loop, const BackendMetrics& metrics, State state,
                                 double started_at)
    : loop_(loop), metrics_(metrics), state_(std::move(state)), started_at_(started_at),
      live_({"total"}, metrics.bounds()) {
  ev_timer_init(&timer_, sample_cb, 0, 1.0);
  timer_.data = this;
  ev_timer_start(loop_, &timer_);
}

MasterDashboard::~MasterDashboard() {
  ev_timer_stop(loop_, &timer_);
}

void MasterDashboard::sample_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<MasterDashboard*>(w->data)->sample();
}

void MasterDashboard::sample() {
  std::vector<metrics::LiveGroup> groups;
  for (size_t a = 0; a < kAppCount; ++a) {
    BackendMetrics::AppTotals t = metrics_.totals(static_cast<App>(a));
    metrics::LiveGroup g;
    g.kind = "app";
    g.name = to_string(static_cast<App>(a));
    for (size_t c = 0; c < kStatusClasses; ++c)
      g.requests[c] = t.requests[c];
    g.latency.push_back(std::move(t.buckets));
    groups.push_back(std::move(g));
  }
  live_.record(ev_time(), std::move(groups));
}

std::string MasterDashboard::stats_json(uint64_t since, bool draining) const {
  SupervisionStats s;
  std::vector<Worker> workers;
  state_(s, workers);
  std::string out = "{\"format\":1,\"server\":\"portico-backend\",\"version\":";
  core::append_json_string(out, PORTICO_VERSION_STRING);
  out += ",\"pid\":" + std::to_string(static_cast<long long>(::getpid()));
  out += draining ? ",\"draining\":true" : ",\"draining\":false";
  out += ",\"uptime_seconds\":" + std::to_string(static_cast<long long>(ev_time() - started_at_));
  out += ",\"interval\":1,";
  live_.append_json(out, since);
  out += ",\"gauges\":{\"workers_configured\":" + std::to_string(s.workers_configured);
  out += ",\"workers_busy\":" + std::to_string(s.workers_busy);
  out += ",\"workers_idle\":" + std::to_string(s.workers_idle);
  uint64_t restarts = 0;
  for (uint64_t r : s.restarts)
    restarts += r;
  out += ",\"worker_restarts\":" + std::to_string(restarts) + "}";
  out += ",\"tables\":[{\"title\":\"workers\",\"columns\":[\"pid\",\"generation\",\"age (s)\","
         "\"in flight\"],\"rows\":[";
  for (size_t i = 0; i < workers.size(); ++i) {
    const Worker& w = workers[i];
    out += i ? ",[" : "[";
    core::append_json_string(out, std::to_string(w.pid));
    out += "," + std::to_string(w.generation) + "," +
           std::to_string(static_cast<long long>(w.age_seconds)) + "," +
           std::to_string(w.in_flight) + "]";
  }
  out += "]},{\"title\":\"worker restarts\",\"columns\":[\"cause\",\"count\"],\"rows\":[";
  for (size_t c = 0; c < kRestartCauses; ++c) {
    out += c ? ",[" : "[";
    core::append_json_string(out, to_string(static_cast<RestartCause>(c)));
    out += "," + std::to_string(s.restarts[c]) + "]";
  }
  out += "]}]}\n";
  return out;
}

} // namespace portico::backend
