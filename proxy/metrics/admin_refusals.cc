#include "metrics/admin_refusals.h"

#include "metrics/metric_family.h"

namespace portico::metrics {

AdminRefusalCounters& admin_refusals() {
  static AdminRefusalCounters counters;
  return counters;
}

void append_admin_metrics(std::vector<prometheus::MetricFamily>& out) {
  auto f = family("portico_admin_requests_refused_total",
                  "Requests for the admin endpoint's state-changing paths (POST /cache/purge) "
                  "refused with 403, by reason: missing_token (a token_file is configured and "
                  "the request has no bearer token), wrong_token, untrusted_peer (neither the "
                  "control socket nor, where allowed, loopback).",
                  prometheus::MetricType::Counter);
  const auto& c = admin_refusals();
  for (size_t i = 0; i < kAdminRefusalCount; ++i) {
    prometheus::ClientMetric m;
    m.label = {{"reason", kAdminRefusals[i]}};
    m.counter.value = static_cast<double>(c.refused[i].load(std::memory_order_relaxed));
    f.metric.push_back(std::move(m));
  }
  out.push_back(std::move(f));
}

} // namespace portico::metrics
