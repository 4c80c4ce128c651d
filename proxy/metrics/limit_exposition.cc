// The limits' and forward auths' series, and those of the Redis that shared limits keep their
// state in: process-wide, as their tables and connections are the workers' together.
#include "metrics/limit_exposition.h"
#include "metrics/limit_counters.h"
#include "metrics/metric_family.h"

namespace portico::metrics {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

void append_store_metrics(std::vector<MetricFamily>& out) {
  auto up = family("portico_rate_limit_store_connections",
                   "Workers connected to each Redis that shared rate limits keep their state in.",
                   MetricType::Gauge);
  auto commands = family("portico_rate_limit_store_commands_total",
                         "Commands sent to each Redis of shared rate limits, by what became of "
                         "them: ok (answered), error (an error or no answer: the connection was "
                         "lost), timeout (not answered within the limit's timeout), down (not "
                         "sent: no connection).",
                         MetricType::Counter);
  auto reconnects = family("portico_rate_limit_store_reconnects_total",
                           "Connections to each Redis of shared rate limits tried again after "
                           "one failed or was lost.",
                           MetricType::Counter);
  auto latency = family("portico_rate_limit_store_seconds",
                        "How long each Redis of shared rate limits took to answer a command.",
                        MetricType::Histogram);
  static const std::vector<double> bounds(std::begin(kStoreBuckets), std::end(kStoreBuckets));
  for_each_store([&](const std::string& name, const StoreCounters& c) {
    ClientMetric m;
    m.label = {{"store", name}};
    m.gauge.value = static_cast<double>(c.connected.load(std::memory_order_relaxed));
    up.metric.push_back(m);
    m.gauge = {};
    m.counter.value = static_cast<double>(c.reconnects.load(std::memory_order_relaxed));
    reconnects.metric.push_back(m);
    for (size_t i = 0; i < kStoreResultCount; ++i) {
      ClientMetric r;
      r.label = {{"store", name}, {"result", kStoreResults[i]}};
      r.counter.value = static_cast<double>(c.results[i].load(std::memory_order_relaxed));
      commands.metric.push_back(std::move(r));
    }
    std::vector<uint64_t> buckets;
    for (const auto& b : c.buckets)
      buckets.push_back(b.load(std::memory_order_relaxed));
    latency.metric.push_back(
        histogram_metric({{"store", name}}, bounds, buckets,
                         static_cast<double>(c.sum_us.load(std::memory_order_relaxed)) / 1e6));
  });
  if (up.metric.empty())
    return;
  out.push_back(std::move(up));
  out.push_back(std::move(commands));
  out.push_back(std::move(reconnects));
  out.push_back(std::move(latency));
}

} // namespace

void append_limit_metrics(std::vector<MetricFamily>& out) {
  // A limit's table is the workers' together: so are its counts.
  auto limited = family("portico_rate_limit_requests_total",
                        "Requests each rate limit decided on: allowed, delayed (let through "
                        "later, to keep to the rate), limited (refused), dry_run (would have "
                        "been refused), unchecked (a shared limit's Redis was down or late: "
                        "its failure mode decided).",
                        MetricType::Counter);
  auto evicted = family("portico_rate_limit_evictions_total",
                        "Keys a rate limit's table gave up while they were still limited (the "
                        "table was full): each starts afresh.",
                        MetricType::Counter);
  for_each_limit([&](const std::string& name, const LimitCounters& c) {
    for (size_t i = 0; i < kLimitResultCount; ++i) {
      ClientMetric m;
      m.label = {{"limit", name}, {"result", kLimitResults[i]}};
      m.counter.value = static_cast<double>(c.results[i].load(std::memory_order_relaxed));
      limited.metric.push_back(std::move(m));
    }
    ClientMetric m;
    m.label = {{"limit", name}};
    m.counter.value = static_cast<double>(c.evictions.load(std::memory_order_relaxed));
    evicted.metric.push_back(std::move(m));
  });
  if (!limited.metric.empty()) {
    out.push_back(std::move(limited));
    out.push_back(std::move(evicted));
  }
  auto auth = family("portico_forward_auth_requests_total",
                     "Requests each forward auth decided on: allowed (a 2xx), denied (its "
                     "401, 403 or 3xx passed to the client), error (another answer, none in "
                     "time, or a reset: error_status), cached (let through by a 2xx remembered "
                     "for the same question).",
                     MetricType::Counter);
  for_each_auth([&](const std::string& name, const AuthCounters& c) {
    for (size_t i = 0; i < kAuthResultCount; ++i) {
      ClientMetric m;
      m.label = {{"auth", name}, {"result", kAuthResults[i]}};
      m.counter.value = static_cast<double>(c.results[i].load(std::memory_order_relaxed));
      auth.metric.push_back(std::move(m));
    }
  });
  if (!auth.metric.empty())
    out.push_back(std::move(auth));
  append_store_metrics(out);
}

} // namespace portico::metrics
