// A route's `prefix_rewrite`: the path prefix it matched replaced before the request goes
// upstream (the access log shows the target as sent).
#include "filters/route_factory.h"

#include <string>

namespace portico::filters {

namespace {

class PrefixRewrite final : public routing::Filter {
public:
  explicit PrefixRewrite(const config::RouteConfig& r) : route_(r) {}

private:
  routing::FilterStatus on_request_head(http::RequestHead& req) override {
    std::string target = route_.prefix_rewrite;
    std::string_view rest = req.target.substr(route_.path_prefix.size());
    // "/api/" rewritten to "/" and "/api/v1" to "/v1": no doubled or missing slash.
    if (target.back() == '/' && !rest.empty() && rest.front() == '/')
      rest.remove_prefix(1);
    target.append(rest);
    req.target = exchange().arena().copy(target);
    return routing::FilterStatus::CONTINUE;
  }
  const config::RouteConfig& route_;
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_prefix_rewrite(const config::RouteConfig* r,
                                                            metrics::WorkerMetrics&) {
  return r && r->has_prefix_rewrite ? factory_for<PrefixRewrite>(*r) : nullptr;
}

} // namespace portico::filters
