#include "config/sections.h"

#include "core/histogram_bounds.h"

#include <cmath>

namespace portico::config {

// Leaves m.buckets holding the bounds the histograms use, listed or log-spaced.
void read_metrics(Reader& r, const toml::table& t, MetricsConfig& m) {
  const std::string w = "[metrics]";
  r.only_keys(t,
              {"enabled", "buckets", "bucket_min", "bucket_max", "buckets_per_decade",
               "route_series_limit"},
              w);
  r.get_bool(t, "enabled", m.enabled, w);
  r.get_number(t, "route_series_limit", m.route_series_limit, w, 0, 1e9);
  if (const toml::node* n = t.get("buckets")) {
    if (t.get("bucket_min") || t.get("bucket_max") || t.get("buckets_per_decade"))
      r.error(n->source(), w + ": 'buckets' lists the bounds; it cannot go with bucket_min, "
                               "bucket_max or buckets_per_decade");
    const toml::array* a = n->as_array();
    if (!a || a->empty())
      r.error(n->source(), w + ": 'buckets' must be a non-empty array of seconds");
    for (size_t i = 0; a && i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      std::optional<double> v =
          e.is_integer() ? std::optional<double>(*e.value<int64_t>()) : e.value<double>();
      if (!v || !(*v > 0) || !std::isfinite(*v)) {
        r.error(e.source(), w + ": each bucket bound must be a positive number of seconds");
        continue;
      }
      if (!m.buckets.empty() && *v <= m.buckets.back())
        r.error(e.source(), w + ": bucket bounds must increase");
      m.buckets.push_back(*v);
    }
  } else if (!t.get("bucket_min") && !t.get("bucket_max") && !t.get("buckets_per_decade")) {
    m.buckets = core::default_bounds();
  } else {
    r.get_number(t, "bucket_min", m.bucket_min, w, 1e-9, 86400);
    r.get_number(t, "bucket_max", m.bucket_max, w, 1e-9, 86400);
    r.get_number(t, "buckets_per_decade", m.buckets_per_decade, w, 1, 20);
    if (m.bucket_max <= m.bucket_min)
      r.error(t.source(), w + ": bucket_max must be above bucket_min");
    else
      m.buckets = core::log_spaced_bounds(m.bucket_min, m.bucket_max, m.buckets_per_decade);
  }
  if (m.buckets.size() > core::kMaxHistogramBuckets)
    r.error(t.source(), w + ": " + std::to_string(m.buckets.size()) + " buckets; at most " +
                            std::to_string(core::kMaxHistogramBuckets) + " are allowed");
}

} // namespace portico::config
