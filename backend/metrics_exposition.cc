#include "metrics_exposition.h"

#include "metrics/metric_family.h"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

namespace portico::backend {

namespace {

using metrics::family;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

ClientMetric gauge(std::vector<ClientMetric::Label> labels, double v) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = v;
  return m;
}

ClientMetric counter(std::vector<ClientMetric::Label> labels, uint64_t v) {
  ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = static_cast<double>(v);
  return m;
}

} // namespace

const char* to_string(RestartCause c) {
  switch (c) {
  case RestartCause::CRASH: return "crash";
  case RestartCause::MAX_REQUESTS: return "max_requests";
  case RestartCause::HUP: return "hup";
  case RestartCause::COUNT: break;
  }
  return "unknown";
}

std::string expose(const BackendMetrics& metrics, const SupervisionStats& stats) {
  std::vector<MetricFamily> out;
  auto requests =
      family("portico_backend_requests_total",
             "Requests answered by the workers, by app and status class.", MetricType::Counter);
  auto duration = family("portico_backend_request_duration_seconds",
                         "Time from the app receiving a request's head to the end of its response.",
                         MetricType::Histogram);
  for (size_t a = 0; a < kAppCount; ++a) {
    const char* app = to_string(static_cast<App>(a));
    BackendMetrics::AppTotals t = metrics.totals(static_cast<App>(a));
    for (size_t c = 0; c < kStatusClasses; ++c) {
      if (c == 0 && t.requests[c] == 0)
        continue; // no app answers 1xx: shown only if one ever did
      requests.metric.push_back(
          counter({{"app", app}, {"status_class", kStatusClassNames[c]}}, t.requests[c]));
    }
    duration.metric.push_back(
        metrics::histogram_metric({{"app", app}}, metrics.bounds(), t.buckets, t.sum));
  }
  out.push_back(std::move(requests));
  out.push_back(std::move(duration));

  auto by_slot = family("portico_backend_slot_requests_total",
                        "Requests answered by the workers of each slot (a worker, and those "
                        "forked in its place after it).",
                        MetricType::Counter);
  std::vector<uint64_t> slots = metrics.requests_by_slot();
  for (size_t i = 0; i < slots.size(); ++i)
    by_slot.metric.push_back(counter({{"slot", std::to_string(i)}}, slots[i]));
  out.push_back(std::move(by_slot));

  auto workers =
      family("portico_backend_workers",
             "Worker processes alive: busy with at least one request, or idle.", MetricType::Gauge);
  workers.metric.push_back(gauge({{"state", "busy"}}, stats.workers_busy));
  workers.metric.push_back(gauge({{"state", "idle"}}, stats.workers_idle));
  out.push_back(std::move(workers));

  auto configured =
      family("portico_backend_workers_configured",
             "Workers the master keeps running (--workers, TTIN/TTOU).", MetricType::Gauge);
  configured.metric.push_back(gauge({}, stats.workers_configured));
  out.push_back(std::move(configured));

  auto restarts = family("portico_backend_worker_restarts_total", "Workers replaced, by cause.",
                         MetricType::Counter);
  for (size_t c = 0; c < kRestartCauses; ++c)
    restarts.metric.push_back(
        counter({{"cause", to_string(static_cast<RestartCause>(c))}}, stats.restarts[c]));
  out.push_back(std::move(restarts));

  auto info = family("portico_backend_build_info", "portico-backend's version.", MetricType::Gauge);
  info.metric.push_back(gauge({{"version", PORTICO_VERSION_STRING}}, 1));
  out.push_back(std::move(info));

  return prometheus::TextSerializer().Serialize(out);
}

} // namespace portico::backend
