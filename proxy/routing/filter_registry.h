#pragma once
// The filters a Router may put on a route, in their run order: filters/registry.cc lists them.
// The router asks each for a factory per route; routing/ knows none of them by name.
#include "config/config.h"
#include "routing/filter.h"

#include <memory>
#include <span>
#include <string_view>

namespace portico::routing {

struct FilterKind {
  std::string_view name;
  // A factory for this route (null: the route does not use the filter), or for requests no
  // route matched (route null).
  std::unique_ptr<FilterFactory> (*make)(const config::RouteConfig* route);
};

using FilterRegistry = std::span<const FilterKind>;

} // namespace portico::routing
