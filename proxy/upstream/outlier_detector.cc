#include "upstream/outlier_detector.h"

#include "core/error_log.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace portico::upstream {

using metrics::EjectionReason;

std::shared_ptr<OutlierDetector> OutlierDetector::of(const config::ClusterConfig& cfg) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<OutlierDetector>> detectors;
  std::lock_guard lock(mu);
  auto& entry = detectors[cfg.name];
  auto d = entry.lock();
  if (!d || d->cfg_ != cfg.outlier || d->endpoints_ != cfg.endpoints) {
    d = std::make_shared<OutlierDetector>(cfg);
    entry = d;
  }
  return d;
}

OutlierDetector::OutlierDetector(const config::ClusterConfig& cfg)
    : cfg_(cfg.outlier), cluster_(cfg.name), endpoints_(cfg.endpoints),
      counters_(metrics::outlier_counters(cfg.name, cfg.endpoints)),
      counts_(new Counts[cfg.endpoints.size()]) {}

void OutlierDetector::record(size_t endpoint, Outcome o, double now) {
  Counts& c = counts_[endpoint];
  if (o == Outcome::SUCCESS) {
    c.ok.fetch_add(1, std::memory_order_relaxed);
    // Read before written: a healthy endpoint's counters stay shared in every core's cache.
    if (c.consecutive_5xx.load(std::memory_order_relaxed) != 0)
      c.consecutive_5xx.store(0, std::memory_order_relaxed);
    if (c.consecutive_gateway.load(std::memory_order_relaxed) != 0)
      c.consecutive_gateway.store(0, std::memory_order_relaxed);
  } else {
    c.failed.fetch_add(1, std::memory_order_relaxed);
    int n5 = c.consecutive_5xx.fetch_add(1, std::memory_order_relaxed) + 1;
    int ng = 0;
    if (o == Outcome::GATEWAY_ERROR)
      ng = c.consecutive_gateway.fetch_add(1, std::memory_order_relaxed) + 1;
    else if (c.consecutive_gateway.load(std::memory_order_relaxed) != 0)
      c.consecutive_gateway.store(0, std::memory_order_relaxed);
    if (cfg_.consecutive_gateway_errors > 0 && ng >= cfg_.consecutive_gateway_errors) {
      std::lock_guard lock(mu_);
      eject(endpoint, EjectionReason::CONSECUTIVE_GATEWAY_ERRORS, now);
    } else if (cfg_.consecutive_5xx > 0 && n5 >= cfg_.consecutive_5xx) {
      std::lock_guard lock(mu_);
      eject(endpoint, EjectionReason::CONSECUTIVE_5XX, now);
    }
  }
  if (c.out.load(std::memory_order_relaxed) && !counters_->ejected(endpoint, now))
    say_returned(endpoint);
  if (now >= next_sweep_.load(std::memory_order_relaxed))
    sweep(now);
}

void OutlierDetector::eject(size_t endpoint, EjectionReason why, double now) {
  Counts& c = counts_[endpoint];
  c.consecutive_5xx.store(0, std::memory_order_relaxed);
  c.consecutive_gateway.store(0, std::memory_order_relaxed);
  if (counters_->ejected(endpoint, now))
    return; // another worker's answers ejected it first
  size_t n = endpoints_.size(), out = 0;
  for (size_t i = 0; i < n; ++i)
    out += counters_->ejected(i, now);
  size_t allowed =
      cfg_.max_ejection_percent == 0
          ? 0
          : std::max<size_t>(1, n * static_cast<size_t>(cfg_.max_ejection_percent) / 100);
  if (out >= allowed)
    return; // Envoy's max_ejection_percent: the rest of the cluster must carry the load
  int times = c.times.fetch_add(1, std::memory_order_relaxed) + 1;
  double seconds = std::min(cfg_.base_ejection_time * times, cfg_.max_ejection_time);
  counters_->state[endpoint].ejected_until.store(now + seconds, std::memory_order_relaxed);
  counters_->state[endpoint].ejections[static_cast<size_t>(why)].fetch_add(
      1, std::memory_order_relaxed);
  c.out.store(true, std::memory_order_relaxed);
  core::log::write_about(core::log::Level::WARN, core::log::Kind::ENDPOINT_DOWN, cluster_,
                         "cluster %s: endpoint %s ejected for %.3g s (%s; ejection %d)",
                         cluster_.c_str(), endpoints_[endpoint].c_str(), seconds,
                         metrics::kEjectionReasons[static_cast<size_t>(why)], times);
}

void OutlierDetector::say_returned(size_t endpoint) {
  bool was = true;
  if (!counts_[endpoint].out.compare_exchange_strong(was, false))
    return; // another worker said it
  core::log::write_about(core::log::Level::INFO, core::log::Kind::ENDPOINT_UP, cluster_,
                         "cluster %s: endpoint %s back from its ejection", cluster_.c_str(),
                         endpoints_[endpoint].c_str());
}

// Once an interval, by whichever worker first sees it end: returns said, multipliers lowered
// for endpoints that stayed in, and the success-rate ejections.
void OutlierDetector::sweep(double now) {
  double due = next_sweep_.load(std::memory_order_relaxed);
  if (now < due || !next_sweep_.compare_exchange_strong(due, now + cfg_.interval))
    return;
  std::lock_guard lock(mu_);
  struct Sweep {
    double& at;
    double now;
    ~Sweep() { at = now; }
  } remember{last_sweep_, now};
  size_t n = endpoints_.size();
  struct Rate {
    size_t endpoint;
    double rate;
  };
  std::vector<Rate> rates;
  for (size_t i = 0; i < n; ++i) {
    Counts& c = counts_[i];
    uint32_t ok = c.ok.exchange(0, std::memory_order_relaxed);
    uint32_t failed = c.failed.exchange(0, std::memory_order_relaxed);
    if (counters_->ejected(i, now))
      continue;
    if (c.out.load(std::memory_order_relaxed))
      say_returned(i);
    // In service through the whole interval, with no failure: one ejection forgiven.
    bool in_throughout =
        counters_->state[i].ejected_until.load(std::memory_order_relaxed) <= last_sweep_;
    if (in_throughout && failed == 0 && c.times.load(std::memory_order_relaxed) > 0)
      c.times.fetch_sub(1, std::memory_order_relaxed);
    if (ok + failed >= static_cast<uint32_t>(cfg_.success_rate_request_volume))
      rates.push_back({i, static_cast<double>(ok) / (ok + failed)});
  }
  if (cfg_.success_rate_minimum_hosts == 0 ||
      rates.size() < static_cast<size_t>(cfg_.success_rate_minimum_hosts))
    return;
  double mean = 0, var = 0;
  for (const auto& r : rates)
    mean += r.rate;
  mean /= static_cast<double>(rates.size());
  for (const auto& r : rates)
    var += (r.rate - mean) * (r.rate - mean);
  double threshold =
      mean - cfg_.success_rate_stdev * std::sqrt(var / static_cast<double>(rates.size()));
  for (const auto& r : rates)
    if (r.rate < threshold)
      eject(r.endpoint, EjectionReason::SUCCESS_RATE, now);
}

} // namespace portico::upstream
