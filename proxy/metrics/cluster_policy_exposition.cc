#include "metrics/cluster_policy_exposition.h"

#include "metrics/cluster_policy_counters.h"
#include "metrics/metric_family.h"

namespace portico::metrics {

using prometheus::ClientMetric;
using prometheus::MetricType;

void append_cluster_policy_metrics(std::vector<prometheus::MetricFamily>& out, double now) {
  auto ejected = family("portico_upstream_endpoint_ejected",
                        "1 while outlier detection has the endpoint ejected: no worker picks it.",
                        MetricType::Gauge);
  auto ejections =
      family("portico_upstream_ejections_total",
             "Endpoints ejected by outlier detection, by reason.", MetricType::Counter);
  for_each_outlier([&](const OutlierCounters& c) {
    for (size_t i = 0; i < c.endpoints.size(); ++i) {
      ClientMetric m;
      m.label = {{"cluster", c.cluster}, {"endpoint", c.endpoints[i]}};
      m.gauge.value = c.ejected(i, now) ? 1 : 0;
      ejected.metric.push_back(m);
      for (size_t r = 0; r < kEjectionReasonCount; ++r) {
        ClientMetric e;
        e.label = {
            {"cluster", c.cluster}, {"endpoint", c.endpoints[i]}, {"reason", kEjectionReasons[r]}};
        e.counter.value =
            static_cast<double>(c.state[i].ejections[r].load(std::memory_order_relaxed));
        ejections.metric.push_back(std::move(e));
      }
    }
  });
  if (!ejected.metric.empty()) {
    out.push_back(std::move(ejected));
    out.push_back(std::move(ejections));
  }
  auto open = family("portico_upstream_breaker_open",
                     "Requests holding a place under each circuit breaker of a cluster.",
                     MetricType::Gauge);
  auto overflows = family("portico_upstream_overflow_total",
                          "Requests refused (503, or a retry not made) at a circuit breaker's "
                          "limit.",
                          MetricType::Counter);
  for_each_breaker([&](const std::string& cluster, const BreakerCounters& c) {
    for (size_t b = 0; b < kBreakerCount; ++b) {
      ClientMetric m;
      m.label = {{"cluster", cluster}, {"breaker", kBreakers[b]}};
      m.gauge.value = static_cast<double>(c.open[b].load(std::memory_order_relaxed));
      open.metric.push_back(m);
      m.gauge = {};
      m.counter.value = static_cast<double>(c.overflows[b].load(std::memory_order_relaxed));
      overflows.metric.push_back(std::move(m));
    }
    ClientMetric m;
    m.label = {{"cluster", cluster}, {"breaker", "retry_budget"}};
    m.counter.value = static_cast<double>(c.budget_overflows.load(std::memory_order_relaxed));
    overflows.metric.push_back(std::move(m));
  });
  if (!open.metric.empty()) {
    out.push_back(std::move(open));
    out.push_back(std::move(overflows));
  }
}

} // namespace portico::metrics
