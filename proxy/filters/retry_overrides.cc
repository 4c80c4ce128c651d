// A route's `retry_on_reset` and `retry_non_idempotent`, over its cluster's (retry_policy.h).
#include "filters/route_factory.h"

namespace portico::filters {

namespace {

class RetryOverrides final : public routing::Filter {
public:
  explicit RetryOverrides(const config::RouteConfig& r) : route_(r) {}

private:
  routing::FilterStatus on_request_head(http::RequestHead&) override {
    exchange_options().retry_on_reset = static_cast<int8_t>(route_.retry_on_reset);
    exchange_options().retry_non_idempotent = static_cast<int8_t>(route_.retry_non_idempotent);
    return routing::FilterStatus::CONTINUE;
  }
  const config::RouteConfig& route_;
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_retry_overrides(const config::RouteConfig* r,
                                                             metrics::WorkerMetrics&) {
  return r && (r->retry_on_reset >= 0 || r->retry_non_idempotent >= 0)
             ? factory_for<RetryOverrides>(*r)
             : nullptr;
}

} // namespace portico::filters
