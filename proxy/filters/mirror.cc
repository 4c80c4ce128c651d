// A route's `mirror` (Envoy's request_mirror_policies, nginx's mirror): a fraction of its
// requests copied, as they go upstream (after every edit before this filter), to a shadow
// cluster, fire and forget. The copy (server/mirror_exchange.h) gets the body as the client's
// arrives and never holds the client back; its answer is dropped. A body past max_body, or a
// client gone before its end, abandons the copy; either way the request itself is untouched.
#include "config/config.h"
#include "core/xorshift.h"
#include "http/request_head.h"
#include "metrics/worker_metrics.h"
#include "routing/filter.h"
#include "server/mirror_exchange.h"

#include <string>

namespace portico::filters {

namespace {

class Mirror final : public routing::Filter, private server::MirrorExchange::Owner {
public:
  Mirror(const config::RouteConfig::Mirror& cfg, metrics::ClusterMetrics& shadow)
      : cfg_(cfg), shadow_(shadow) {}

  routing::FilterStatus on_request_head(http::RequestHead& req) override {
    server::Exchange& ex = exchange();
    server::RequestHandler* handler = ex.handler();
    if (!handler || !drawn() || req.is_websocket_upgrade())
      return routing::FilterStatus::CONTINUE;
    if (req.content_length > 0 && static_cast<uint64_t>(req.content_length) > cfg_.max_body) {
      count(metrics::MirrorOutcome::ABANDONED); // too large to copy: known from the start
      return routing::FilterStatus::CONTINUE;
    }
    // Envoy's shadow host: "api.example.com:8080" becomes "api.example.com-shadow:8080".
    std::string_view host = http::host_of(req.authority);
    thread_local std::string authority;
    authority.assign(host).append(cfg_.host_suffix).append(req.authority.substr(host.size()));
    bool body_follows = req.has_body() || (req.framed() && !ex.request_ended());
    mirror_ = server::MirrorExchange::start(
        ex.loop(), *handler, req, authority, body_follows, ex.client_address(), ex.listener_index(),
        ex.over_tls(), static_cast<int32_t>(cfg_.cluster_index),
        {&counter(metrics::MirrorOutcome::ANSWERED), &counter(metrics::MirrorOutcome::FAILED)});
    if (mirror_ && body_follows)
      mirror_->set_owner(this);
    else if (mirror_)
      mirror_ = nullptr; // whole already: it goes on alone
    return routing::FilterStatus::CONTINUE;
  }

  routing::FilterStatus on_request_body(std::string_view& data, bool end) override {
    if (!mirror_)
      return routing::FilterStatus::CONTINUE;
    copied_ += data.size();
    if (copied_ > cfg_.max_body) {
      give_up();
      return routing::FilterStatus::CONTINUE;
    }
    mirror_->body(data);
    if (end && mirror_)
      let_go({});
    return routing::FilterStatus::CONTINUE;
  }

  routing::FilterStatus on_request_trailers(std::span<const http::Header>& trailers) override {
    if (mirror_)
      let_go(trailers);
    return routing::FilterStatus::CONTINUE;
  }

  void on_exchange_close() override {
    if (mirror_)
      give_up(); // the client went before its body's end: the copy would be a different request
  }

private:
  void on_mirror_gone() override { mirror_ = nullptr; }
  void let_go(std::span<const http::Header> trailers) {
    auto* m = mirror_;
    mirror_ = nullptr;
    m->release();
    m->end(trailers);
  }
  void give_up() {
    auto* m = mirror_;
    mirror_ = nullptr;
    m->abandon();
    count(metrics::MirrorOutcome::ABANDONED);
  }
  bool drawn() {
    if (cfg_.fraction >= 1)
      return true;
    thread_local uint64_t rng = 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(&rng);
    return core::unit_fraction(core::xorshift64(rng)) < cfg_.fraction;
  }
  core::Counter& counter(metrics::MirrorOutcome o) {
    return shadow_.mirrored[static_cast<size_t>(o)];
  }
  void count(metrics::MirrorOutcome o) { counter(o).inc(); }

  const config::RouteConfig::Mirror& cfg_;
  metrics::ClusterMetrics& shadow_;
  server::MirrorExchange* mirror_ = nullptr; // while the body is being copied
  uint64_t copied_ = 0;
};

class MirrorFactory final : public routing::FilterFactory {
public:
  MirrorFactory(const config::RouteConfig::Mirror& cfg, metrics::ClusterMetrics& shadow)
      : cfg_(cfg), shadow_(shadow) {}
  routing::Filter* create(const server::Exchange&) const override {
    return new Mirror(cfg_, shadow_);
  }

private:
  const config::RouteConfig::Mirror& cfg_;
  metrics::ClusterMetrics& shadow_;
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_mirror(const config::RouteConfig* route,
                                                    metrics::WorkerMetrics& metrics) {
  if (!route || !route->has_mirror || route->mirror.fraction <= 0)
    return nullptr;
  return std::make_unique<MirrorFactory>(route->mirror,
                                         metrics.cluster(route->mirror.cluster_index));
}

} // namespace portico::filters
