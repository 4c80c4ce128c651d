// A route's `response_headers_remove` and `response_headers_add`, in that order, on what the
// upstream answered (the proxy's own answers are left as they are).
#include "filters/field_edits.h"
#include "filters/route_factory.h"

namespace portico::filters {

namespace {

class ResponseHeaders final : public routing::Filter {
public:
  explicit ResponseHeaders(const config::RouteConfig& r) : route_(r) {}

private:
  routing::FilterStatus on_response_head(routing::FilterResponseHead& head) override {
    if (head.source != routing::ResponseSource::UPSTREAM)
      return routing::FilterStatus::CONTINUE;
    edit_fields(*head.fields, route_.response_headers_remove, route_.response_headers_add);
    return routing::FilterStatus::CONTINUE;
  }
  const config::RouteConfig& route_;
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_response_headers(const config::RouteConfig* r,
                                                              metrics::WorkerMetrics&) {
  return r && (!r->response_headers_add.empty() || !r->response_headers_remove.empty())
             ? factory_for<ResponseHeaders>(*r)
             : nullptr;
}

} // namespace portico::filters
