// How a cluster treats its endpoints and its load: outlier detection and circuit breakers.
// [[cluster]] outlier_detection = { consecutive_5xx, consecutive_gateway_errors, interval,
// success_rate_stdev, success_rate_minimum_hosts, success_rate_request_volume,
// base_ejection_time, max_ejection_time, max_ejection_percent }: Envoy's keys and defaults. And
// circuit_breakers = { max_pending, max_requests, max_retries }: how a cluster sheds load. And
// retry = { retries, per_try_timeout, on_status, backoff_base, backoff_max, budget_percent,
// budget_min_concurrency }: how often a failed try is made again. hash_on, the key of lb =
// ring_hash or maglev; sticky = { cookie, max_age, path, secure, httponly }.
#include "config/config.h"
#include "config/sections.h"
#include "http/header.h"

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

void read_retry(Reader& r, const toml::table& cluster, RetryConfig& rc, const std::string& where) {
  const toml::table* t = r.get_table(cluster, "retry", where);
  if (!t)
    return;
  const std::string w = where + " retry";
  r.only_keys(*t,
              {"retries", "per_try_timeout", "on_status", "backoff_base", "backoff_max",
               "budget_percent", "budget_min_concurrency"},
              w);
  r.get_number(*t, "retries", rc.retries, w, 0, 10);
  r.get_number(*t, "per_try_timeout", rc.per_try_timeout, w, 0, 86400);
  r.get_number(*t, "backoff_base", rc.backoff_base, w, 0, 60);
  r.get_number(*t, "backoff_max", rc.backoff_max, w, 0, 600);
  r.get_number(*t, "budget_percent", rc.budget_percent, w, 0, 100);
  r.get_number(*t, "budget_min_concurrency", rc.budget_min_concurrency, w, 0, 100000000);
  if (rc.backoff_max < rc.backoff_base)
    r.error(t->source(), w + ": backoff_max is less than backoff_base");
  if (const toml::node* n = t->get("on_status")) {
    const toml::array* a = n->as_array();
    if (!a) {
      r.error(n->source(), w + ": on_status is a list of statuses, e.g. [502, 503, 504]");
      return;
    }
    for (const auto& e : *a) {
      auto status = e.value<int64_t>();
      if (!status || *status < 500 || *status > 599)
        r.error(e.source(), w + ": on_status holds 5xx statuses (500-599)");
      else
        rc.on_status.push_back(static_cast<int>(*status));
    }
  }
}

void read_hedge(Reader& r, const toml::table& cluster, HedgeConfig& h, const std::string& where) {
  const toml::table* t = r.get_table(cluster, "hedge", where);
  if (!t)
    return;
  const std::string w = where + " hedge";
  h.enabled = true;
  r.only_keys(*t, {"delay", "quantile"}, w);
  r.get_number(*t, "delay", h.delay, w, 0.0001, 3600);
  r.get_number(*t, "quantile", h.quantile, w, 0, 0.999);
}

void read_hash_on(Reader& r, const toml::table& cluster, ClusterConfig& cl,
                  const std::string& where) {
  const toml::node* n = cluster.get("hash_on");
  if (!n)
    return;
  if (cl.lb != LoadBalancing::RING_HASH && cl.lb != LoadBalancing::MAGLEV) {
    r.error(n->source(), where + ": hash_on is the key of lb = \"ring_hash\" or \"maglev\"");
    return;
  }
  cl.hash_on.clear();
  auto part = [&](const toml::node& e) {
    auto text = e.value<std::string>();
    auto p = text ? http::parse_key_part(*text) : std::nullopt;
    if (p)
      cl.hash_on.push_back(std::move(*p));
    else
      r.error(e.source(), where + ": hash_on is \"client\", \"path\", \"header:NAME\", "
                                  "\"cookie:NAME\" or \"query:NAME\", or a list of them");
  };
  if (const toml::array* a = n->as_array()) {
    for (const auto& e : *a)
      part(e);
    if (a->empty())
      r.error(n->source(), where + ": hash_on needs at least one part");
  } else {
    part(*n);
  }
}

void read_sticky(Reader& r, const toml::table& cluster, StickyConfig& s, const std::string& where) {
  const toml::table* t = r.get_table(cluster, "sticky", where);
  if (!t)
    return;
  const std::string w = where + " sticky";
  s.enabled = true;
  r.only_keys(*t, {"cookie", "max_age", "path", "secure", "httponly"}, w);
  r.get_string(*t, "cookie", s.cookie, w);
  r.get_number(*t, "max_age", s.max_age, w, 0, 10 * 365 * 86400.0);
  r.get_string(*t, "path", s.path, w);
  r.get_bool(*t, "secure", s.secure, w);
  r.get_bool(*t, "httponly", s.httponly, w);
  // A cookie name is an RFC 6265 token; a path may not end the attribute early.
  if (!http::is_token(s.cookie))
    r.error(t->get("cookie") ? t->get("cookie")->source() : t->source(),
            w + ": cookie is a cookie name (letters, digits and !#$%&'*+-.^_`|~)");
  if (s.path.empty() || s.path[0] != '/' || s.path.find_first_of(";\r\n") != std::string::npos)
    r.error(t->get("path") ? t->get("path")->source() : t->source(),
            w + ": path starts with '/' and has no ';'");
}

} // namespace portico::config
