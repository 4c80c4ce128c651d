// How a cluster treats its endpoints and its load: outlier detection and circuit breakers.
// [[cluster]] outlier_detection = { consecutive_5xx, consecutive_gateway_errors, interval,
// success_rate_stdev, success_rate_minimum_hosts, success_rate_request_volume,
// base_ejection_time, max_ejection_time, max_ejection_percent }: Envoy's keys and defaults. And
// circuit_breakers = { max_pending, max_requests, max_retries }: how a cluster sheds load.
#include "config/config.h"
#include "config/sections.h"

namespace portico::config {

void read_outlier_detection(Reader& r, const toml::table& cluster, OutlierConfig& o,
                            const std::string& where) {
  const toml::table* t = r.get_table(cluster, "outlier_detection", where);
  if (!t)
    return;
  const std::string w = where + " outlier_detection";
  o.enabled = true;
  r.only_keys(*t,
              {"consecutive_5xx", "consecutive_gateway_errors", "interval", "success_rate_stdev",
               "success_rate_minimum_hosts", "success_rate_request_volume", "base_ejection_time",
               "max_ejection_time", "max_ejection_percent"},
              w);
  r.get_number(*t, "consecutive_5xx", o.consecutive_5xx, w, 0, 1000000);
  r.get_number(*t, "consecutive_gateway_errors", o.consecutive_gateway_errors, w, 0, 1000000);
  r.get_number(*t, "interval", o.interval, w, 0.01, 86400);
  r.get_number(*t, "success_rate_stdev", o.success_rate_stdev, w, 0, 100);
  r.get_number(*t, "success_rate_minimum_hosts", o.success_rate_minimum_hosts, w, 0, 100000);
  r.get_number(*t, "success_rate_request_volume", o.success_rate_request_volume, w, 1, 1000000000);
  r.get_number(*t, "base_ejection_time", o.base_ejection_time, w, 0.001, 86400);
  r.get_number(*t, "max_ejection_time", o.max_ejection_time, w, 0.001, 86400);
  r.get_number(*t, "max_ejection_percent", o.max_ejection_percent, w, 0, 100);
  if (o.max_ejection_time < o.base_ejection_time)
    r.error(t->source(), w + ": max_ejection_time is less than base_ejection_time");
}

void read_circuit_breakers(Reader& r, const toml::table& cluster, BreakerConfig& b,
                           const std::string& where) {
  const toml::table* t = r.get_table(cluster, "circuit_breakers", where);
  if (!t)
    return;
  const std::string w = where + " circuit_breakers";
  b.enabled = true;
  r.only_keys(*t, {"max_pending", "max_requests", "max_retries"}, w);
  r.get_number(*t, "max_pending", b.max_pending, w, 0, 100000000);
  r.get_number(*t, "max_requests", b.max_requests, w, 0, 100000000);
  r.get_number(*t, "max_retries", b.max_retries, w, 0, 100000000);
}

} // namespace portico::config
