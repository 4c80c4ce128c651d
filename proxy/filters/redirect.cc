// A route's `redirect`: answered here with its code and a Location built from the request's
// scheme, host and target, each replaced where the route says.
#include "filters/route_factory.h"

#include <string>

namespace portico::filters {

namespace {

class Redirect final : public routing::Filter {
public:
  explicit Redirect(const config::RouteConfig& r) : rd_(r.redirect) {}

private:
  routing::FilterStatus on_request_head(http::RequestHead& req) override {
    server::Exchange& ex = exchange();
    std::string_view own = ex.over_tls() ? "https" : "http";
    std::string_view scheme = rd_.scheme.empty() ? own : std::string_view(rd_.scheme);
    std::string_view host = rd_.host.empty() ? req.authority : std::string_view(rd_.host);
    if (rd_.host.empty() && scheme != own)
      host = http::host_of(host); // the port was the old scheme's
    std::string location;
    location.append(scheme).append("://").append(host);
    location.append(rd_.path.empty() ? req.target : std::string_view(rd_.path));
    location_ = {"location", ex.arena().copy(location)};
    std::string body = std::string(http::reason_phrase(rd_.code)) + "\n";
    respond({rd_.code, "text/plain", ex.arena().copy(body), {&location_, 1}});
    return routing::FilterStatus::STOP;
  }
  const config::RedirectAction& rd_;
  http::Header location_;
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_redirect(const config::RouteConfig* r,
                                                      metrics::WorkerMetrics&) {
  return r && r->has_redirect ? factory_for<Redirect>(*r) : nullptr;
}

} // namespace portico::filters
