#include "upstream/cluster.h"

#include "core/error_log.h"
#include "upstream/dns_resolver.h"

#include <algorithm>

namespace portico::upstream {

namespace {
constexpr double kMinTtl = 5, kMaxTtl = 300, kDefaultTtl = 30;
constexpr double kRetryAfterFailure = 5;
} // namespace

int Cluster::share(int max_connections, int worker_index, int worker_count) {
  if (max_connections <= 0)
    return 0;
  int base = max_connections / worker_count;
  int extra = worker_index < max_connections % worker_count ? 1 : 0;
  return std::max(1, base + extra);
}

Cluster::Cluster(struct ev_loop* loop, core::DeferredQueue& deferred, DnsResolver& resolver,
                 const config::ClusterConfig& cfg, int worker_index, int worker_count,
                 metrics::ClusterMetrics& metrics, SSL_CTX* tls)
    : loop_(loop), resolver_(resolver), cfg_(cfg), metrics_(metrics) {
  int limit = share(cfg.max_connections, worker_index, worker_count);
  for (size_t i = 0; i < cfg.endpoints.size(); ++i) {
    auto spec = parse_endpoint(cfg.endpoints[i]); // validated with the config
    pools_.push_back(std::make_unique<UpstreamPool>(loop, deferred, *spec, cfg, limit, metrics,
                                                    metrics.endpoints[i], tls));
    if (!pools_.back()->has_address()) {
      auto r = std::make_unique<NameRefresh>();
      r->cluster = this;
      r->index = i;
      ev_init(&r->timer, refresh_cb);
      r->timer.data = r.get();
      refresh_.push_back(std::move(r));
      resolve(i);
    }
  }
}

Cluster::~Cluster() {
  *alive_ = false;
  for (auto& r : refresh_)
    ev_timer_stop(loop_, &r->timer);
}

void Cluster::resolve(size_t index) {
  const EndpointSpec& e = pools_[index]->endpoint();
  std::weak_ptr<bool> alive = alive_;
  resolver_.resolve(e.host, e.port, [this, index, alive](std::vector<SocketAddress> a, int ttl) {
    if (auto guard = alive.lock(); guard && *guard)
      on_resolved(index, std::move(a), ttl);
  });
}

void Cluster::on_resolved(size_t index, std::vector<SocketAddress> addresses, int ttl) {
  double again = kRetryAfterFailure;
  if (addresses.empty()) {
    const EndpointSpec& e = pools_[index]->endpoint();
    core::log::write(core::log::Level::WARN, core::log::Kind::DNS,
                     "cluster %s: %s did not resolve%s; asking again in %g s", cfg_.name.c_str(),
                     e.host.c_str(),
                     pools_[index]->has_address() ? " (the last address is kept)" : "", again);
    pools_[index]->address_failed();
  } else {
    // One address per endpoint: the first answer, as the resolver orders them.
    pools_[index]->set_address(addresses.front());
    again = ttl > 0 ? std::clamp<double>(ttl, kMinTtl, kMaxTtl) : kDefaultTtl;
  }
  for (auto& r : refresh_)
    if (r->index == index) {
      ev_timer_set(&r->timer, again, 0);
      ev_timer_start(loop_, &r->timer);
    }
}

void Cluster::refresh_cb(struct ev_loop*, ev_timer* w, int) {
  auto* r = static_cast<NameRefresh*>(w->data);
  r->cluster->resolve(r->index);
}

UpstreamPool& Cluster::pick() {
  size_t n = pools_.size();
  if (n == 1)
    return *pools_[0];
  // Least outstanding among the endpoints not held down after a failed connect; if every
  // one is, among all (a request is better tried than refused). Starting after the last
  // choice makes equal loads rotate.
  double now = ev_now(loop_);
  size_t best = n;
  for (int pass = 0; pass < 2 && best == n; ++pass)
    for (size_t k = 0; k < n; ++k) {
      size_t i = (next_ + k) % n;
      if (pass == 0 && !pools_[i]->available(now))
        continue;
      if (best == n || pools_[i]->load() < pools_[best]->load())
        best = i;
    }
  next_ = best + 1;
  return *pools_[best];
}

} // namespace portico::upstream
