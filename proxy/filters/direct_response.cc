// A route's `direct_response`: its status, content type and body, without an upstream.
#include "filters/route_factory.h"

namespace portico::filters {

namespace {

class DirectResponse final : public routing::Filter {
public:
  explicit DirectResponse(const config::RouteConfig& r) : d_(r.direct_response) {}

private:
  routing::FilterStatus on_request_head(http::RequestHead&) override {
    respond({d_.status, d_.content_type, d_.body, {}});
    return routing::FilterStatus::STOP;
  }
  const config::DirectResponse& d_;
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_direct_response(const config::RouteConfig* r,
                                                             metrics::WorkerMetrics&) {
  return r && r->has_direct_response ? factory_for<DirectResponse>(*r) : nullptr;
}

} // namespace portico::filters
