// A route's `request_headers_remove` and `request_headers_add`, in that order.
#include "filters/field_edits.h"
#include "filters/route_factory.h"

namespace portico::filters {

namespace {

class RequestHeaders final : public routing::Filter {
public:
  explicit RequestHeaders(const config::RouteConfig& r) : route_(r) {}

private:
  routing::FilterStatus on_request_head(http::RequestHead& req) override {
    edit_fields(req.headers, route_.request_headers_remove, route_.request_headers_add);
    return routing::FilterStatus::CONTINUE;
  }
  const config::RouteConfig& route_;
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_request_headers(const config::RouteConfig* r,
                                                             metrics::WorkerMetrics&) {
  return r && (!r->request_headers_add.empty() || !r->request_headers_remove.empty())
             ? factory_for<RequestHeaders>(*r)
             : nullptr;
}

} // namespace portico::filters
