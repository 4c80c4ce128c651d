#pragma once
// The filters a Router may put on a route, in their run order: filters/registry.cc lists them.
// The router asks each for a factory per route; routing/ knows none of them by name.
#include "config/config.h"
#include "metrics/worker_metrics.h"
#include "routing/filter.h"

#include <memory>
#include <span>
#include <string_view>

namespace portico::config {
struct RouteSettingsReader; // config/route_settings.h
}

namespace portico::routing {

struct FilterKind {
  std::string_view name;
  // A factory for this route (null: the route does not use the filter), or for requests no
  // route matched (route null); metrics is the worker's shard, for a filter that counts.
  std::unique_ptr<FilterFactory> (*make)(const config::RouteConfig* route,
                                         metrics::WorkerMetrics& metrics);
  // The [[route]] key the filter claims for its own settings, with its reader; null for a
  // filter that reads built-in keys only.
  const config::RouteSettingsReader* settings = nullptr;
};

using FilterRegistry = std::span<const FilterKind>;

} // namespace portico::routing
