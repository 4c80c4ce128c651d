// gRPC calls over HTTP/2 (routing/grpc_status.h): the proxy's own answers become trailers-only
// responses with grpc-status, and grpc-timeout is a deadline. First in the chain, so that it
// sees every local reply, whichever filter made it.
#include "config/config.h"
#include "filters/deadline.h"
#include "filters/route_factory.h"
#include "routing/grpc_status.h"

#include <charconv>
#include <memory>
#include <string>

namespace portico::filters {

namespace {

class GrpcFilter final : public Deadline {
  routing::FilterStatus on_request_head(http::RequestHead& req) override {
    if (std::optional<double> t = routing::grpc::timeout_of(req))
      start(std::max(*t, 1e-6));
    return routing::FilterStatus::CONTINUE;
  }

  void on_local_reply(routing::LocalReply& reply) override {
    if (reply.status < 400)
      return; // a redirect or a configured answer: not an error of the call
    std::string_view text = reply.body;
    if (!text.empty() && text.back() == '\n')
      text.remove_suffix(1);
    routing::grpc::append_message(message_, text);
    auto end = std::to_chars(code_, code_ + sizeof code_, routing::grpc::status_for(reply.status));
    fields_[0] = {"grpc-status", {code_, static_cast<size_t>(end.ptr - code_)}};
    fields_[1] = {"grpc-message", message_};
    reply.status = 200;
    reply.content_type = "application/grpc";
    reply.body = {}; // the HEADERS frame ends the stream: trailers-only
    reply.fields = fields_;
  }

  std::string message_;
  char code_[4];
  http::Header fields_[2];
};

class GrpcFactory final : public routing::FilterFactory {
  routing::Filter* create(const server::Exchange& ex) const override {
    const auto& req = ex.request();
    if (req.version != http::Version::HTTP_2 || !routing::grpc::is_grpc(req))
      return nullptr;
    return new GrpcFilter();
  }
  bool http2_only() const override { return true; }
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_grpc(const config::RouteConfig*,
                                                  metrics::WorkerMetrics&) {
  return std::make_unique<GrpcFactory>();
}

} // namespace portico::filters
