#pragma once
// The factory most filters need: one F per request, made from its route's configuration
// (which outlives the router, and so every factory and filter).
#include "config/config.h"
#include "routing/filter.h"

#include <memory>

namespace portico::metrics {
class WorkerMetrics; // what each make_NAME is given (filters/registry.cc)
}

namespace portico::filters {

template <typename F> class RouteFactory final : public routing::FilterFactory {
public:
  explicit RouteFactory(const config::RouteConfig& route) : route_(route) {}
  routing::Filter* create(const server::Exchange&) const override { return new F(route_); }

private:
  const config::RouteConfig& route_;
};

template <typename F>
std::unique_ptr<routing::FilterFactory> factory_for(const config::RouteConfig& r) {
  return std::make_unique<RouteFactory<F>>(r);
}

} // namespace portico::filters
