// A route's `timeout`: a deadline for the whole response (filters/deadline.h).
#include "filters/deadline.h"
#include "filters/route_factory.h"

namespace portico::filters {

namespace {

class RouteTimeout final : public Deadline {
public:
  explicit RouteTimeout(const config::RouteConfig& r) : seconds_(r.timeout) {}

private:
  routing::FilterStatus on_request_head(http::RequestHead&) override {
    start(seconds_);
    return routing::FilterStatus::CONTINUE;
  }
  double seconds_;
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_route_timeout(const config::RouteConfig* r,
                                                           metrics::WorkerMetrics&) {
  return r && r->timeout > 0 ? factory_for<RouteTimeout>(*r) : nullptr;
}

} // namespace portico::filters
