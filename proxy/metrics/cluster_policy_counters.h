#pragma once
// What outlier detection did to each endpoint of a cluster, and how full each circuit breaker
// is. What outlier detection did to each endpoint (upstream/outlier_detector.h decides,
// for every worker at once): until when it is ejected, and its ejections by reason. One per
// cluster name, made when a configuration is read; /metrics, /status and the dashboard read
// them.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace portico::metrics {

enum class EjectionReason : uint8_t { CONSECUTIVE_5XX, CONSECUTIVE_GATEWAY_ERRORS, SUCCESS_RATE };
inline constexpr const char* kEjectionReasons[] = {"consecutive_5xx", "consecutive_gateway_errors",
                                                   "success_rate"};
inline constexpr size_t kEjectionReasonCount = 3;

struct OutlierEndpoint {
  std::atomic<double> ejected_until{0}; // ev_time() seconds; past: in service
  std::atomic<uint64_t> ejections[kEjectionReasonCount] = {};
};

struct OutlierCounters {
  OutlierCounters(std::string cluster, std::vector<std::string> endpoints)
      : cluster(std::move(cluster)), endpoints(std::move(endpoints)),
        state(new OutlierEndpoint[this->endpoints.size()]) {}
  const std::string cluster;
  const std::vector<std::string> endpoints; // as configured
  std::unique_ptr<OutlierEndpoint[]> state; // one per endpoint
  bool ejected(size_t endpoint, double now) const {
    return now < state[endpoint].ejected_until.load(std::memory_order_relaxed);
  }
};

// The counters of cluster with these endpoints: the ones the last configuration made when it
// had the same endpoints (a reload keeps ejections), else new ones. Never on a request.
std::shared_ptr<OutlierCounters> outlier_counters(const std::string& cluster,
                                                  const std::vector<std::string>& endpoints);
// A cluster's circuit breakers ([[cluster]] circuit_breakers) and retry budget: the requests
// holding a place under each, over the process, and those refused at its limit. One per cluster
// name, made the first time and kept for the process's life (a reload's exchanges and the last
// ones' count together).
enum class Breaker : uint8_t { MAX_PENDING, MAX_REQUESTS, MAX_RETRIES };
inline constexpr const char* kBreakers[] = {"max_pending", "max_requests", "max_retries"};
inline constexpr size_t kBreakerCount = 3;

struct BreakerCounters {
  std::atomic<int64_t> open[kBreakerCount] = {};
  std::atomic<uint64_t> overflows[kBreakerCount] = {};
  std::atomic<uint64_t> budget_overflows{0}; // retries not made: past the retry budget
};

// Never on a request.
BreakerCounters& breaker_counters(std::string_view cluster);
void for_each_breaker(const std::function<void(const std::string&, const BreakerCounters&)>& f);

// cluster's counters, if any configuration made some and they are still in use.
std::shared_ptr<const OutlierCounters> find_outlier_counters(std::string_view cluster);
void for_each_outlier(const std::function<void(const OutlierCounters&)>& f);

} // namespace portico::metrics
