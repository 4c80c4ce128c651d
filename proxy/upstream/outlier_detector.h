#pragma once
// Envoy's outlier detection for one cluster, shared by every worker of the process: an endpoint
// that answers consecutive_5xx 5xx in a row, or consecutive_gateway_errors gateway errors in a
// row (502, 503, 504, a failed connect, a reset, a timeout), or whose success rate over an
// interval is below the cluster's mean by success_rate_stdev deviations, is ejected: every
// worker's picks pass it over until base_ejection_time × (its ejections so far) has passed
// (at most max_ejection_time), then it is back on its own. No more than max_ejection_percent
// of the endpoints are out at once (at least one may be). An endpoint in service through a whole
// interval without a failure has its ejection count lowered by one, as Envoy's multiplier
// decays.
//
// What a request costs: a few relaxed atomic operations on its endpoint's counters. Ejecting
// and the interval's sweep (which whichever worker first sees the interval end does) take a
// mutex, seldom.
#include "config/config.h"
#include "metrics/cluster_policy_counters.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace portico::upstream {

class OutlierDetector {
public:
  enum class Outcome : uint8_t { SUCCESS, FAILURE_5XX, GATEWAY_ERROR };

  // The detector of the cluster cfg names: the one the last configuration made when its
  // endpoints and outlier_detection are the same (a reload keeps ejections), else a new one.
  // When a configuration is applied, never on a request.
  static std::shared_ptr<OutlierDetector> of(const config::ClusterConfig& cfg);
  OutlierDetector(const config::ClusterConfig& cfg);

  // An attempt's outcome at endpoint (its index in the cluster's endpoints) at now (ev_now).
  void record(size_t endpoint, Outcome o, double now);
  // Until when endpoint is ejected: what a pool checks on each pick.
  const std::atomic<double>& ejected_until(size_t endpoint) const {
    return counters_->state[endpoint].ejected_until;
  }

private:
  struct Counts {
    std::atomic<int32_t> consecutive_5xx{0}, consecutive_gateway{0};
    std::atomic<uint32_t> ok{0}, failed{0}; // this interval
    std::atomic<int32_t> times{0};          // ejections that the multiplier counts
    std::atomic<bool> out{false};           // ejected, its return not said yet
  };
  void eject(size_t endpoint, metrics::EjectionReason why, double now); // holds mu_
  void sweep(double now);
  void say_returned(size_t endpoint);

  const config::OutlierConfig cfg_;
  const std::string cluster_;
  const std::vector<std::string> endpoints_;
  std::shared_ptr<metrics::OutlierCounters> counters_;
  std::unique_ptr<Counts[]> counts_;
  std::atomic<double> next_sweep_{0};
  double last_sweep_ = 0; // under mu_
  std::mutex mu_;         // ejections and sweeps only
};

} // namespace portico::upstream
