#include "upstream/cluster.h"

#include "core/error_log.h"
#include "upstream/dns_resolver.h"

#include <algorithm>
#include <cstring>

namespace portico::upstream {

namespace {
constexpr double kMinTtl = 1, kMaxTtl = 300, kDefaultTtl = 30;
constexpr double kSweepEvery = 1;

bool same(const SocketAddress& a, const SocketAddress& b) {
  return a.len == b.len && std::memcmp(&a.storage, &b.storage, a.len) == 0;
}
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
    : loop_(loop), resolver_(resolver), cfg_(cfg), metrics_(metrics), deferred_(deferred),
      tls_(tls), limit_(share(cfg.max_connections, worker_index, worker_count)) {
  ev_init(&sweep_, sweep_cb);
  sweep_.data = this;
  for (size_t i = 0; i < cfg.endpoints.size(); ++i) {
    auto spec = parse_endpoint(cfg.endpoints[i]); // validated with the config
    pools_.push_back(std::make_unique<UpstreamPool>(loop, deferred, *spec, cfg, limit_, metrics,
                                                    metrics.endpoints[i], tls));
    endpoint_of_.push_back(i);
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
  ev_timer_stop(loop_, &sweep_);
}

void Cluster::resolve(size_t index) {
  EndpointSpec e = *parse_endpoint(cfg_.endpoints[index]);
  std::weak_ptr<bool> alive = alive_;
  resolver_.resolve(e.host, e.port, [this, index, alive](std::vector<SocketAddress> a, int ttl) {
    if (auto guard = alive.lock(); guard && *guard)
      on_resolved(index, std::move(a), ttl);
  });
}

void Cluster::on_resolved(size_t index, std::vector<SocketAddress> addresses, int ttl) {
  double again = kRetryAfterFailure;
  std::vector<size_t> mine; // this name's pools, by position in pools_
  for (size_t p = 0; p < pools_.size(); ++p)
    if (endpoint_of_[p] == index)
      mine.push_back(p);
  if (addresses.empty()) {
    bool known = pools_[mine.front()]->has_address();
    core::log::write(core::log::Level::WARN, core::log::Kind::DNS,
                     "cluster %s: %s did not resolve%s; asking again in %g s", cfg_.name.c_str(),
                     pools_[mine.front()]->endpoint().host.c_str(),
                     known ? " (the last addresses are kept)" : "", again);
    for (size_t p : mine)
      pools_[p]->address_failed();
  } else {
    again = ttl > 0 ? std::clamp<double>(ttl, kMinTtl, kMaxTtl) : kDefaultTtl;
    std::vector<bool> placed(addresses.size(), false);
    std::vector<size_t> gone;
    for (size_t p : mine) {
      UpstreamPool& pool = *pools_[p];
      bool found = false;
      for (size_t a = 0; a < addresses.size() && pool.has_address(); ++a)
        if (!placed[a] && same(pool.address(), addresses[a]))
          placed[a] = found = true;
      if (!found && !pool.has_address()) {
        // The name's first pool, waiting for its first answer: it takes the first address.
        for (size_t a = 0; a < addresses.size() && !found; ++a)
          if (!placed[a]) {
            pool.set_address(addresses[a]);
            placed[a] = found = true;
          }
      }
      if (!found)
        gone.push_back(p);
    }
    size_t added = 0;
    EndpointSpec spec = pools_[mine.front()]->endpoint();
    for (size_t a = 0; a < addresses.size(); ++a) {
      if (placed[a])
        continue;
      pools_.push_back(std::make_unique<UpstreamPool>(loop_, deferred_, spec, cfg_, limit_,
                                                      metrics_, metrics_.endpoints[index], tls_));
      pools_.back()->set_address(addresses[a]);
      endpoint_of_.push_back(index);
      ++added;
    }
    // Removed addresses drain: no new request, the ones on them finish (sweep()).
    for (auto it = gone.rbegin(); it != gone.rend(); ++it) {
      retiring_.push_back(std::move(pools_[*it]));
      pools_.erase(pools_.begin() + static_cast<ptrdiff_t>(*it));
      endpoint_of_.erase(endpoint_of_.begin() + static_cast<ptrdiff_t>(*it));
    }
    if (added || !gone.empty())
      core::log::write(core::log::Level::INFO, core::log::Kind::GENERAL,
                       "cluster %s: %s now has %zu addresses (%zu added, %zu removed)",
                       cfg_.name.c_str(), spec.host.c_str(), addresses.size(), added, gone.size());
    if (!retiring_.empty() && !ev_is_active(&sweep_)) {
      ev_timer_set(&sweep_, kSweepEvery, kSweepEvery);
      ev_timer_start(loop_, &sweep_);
    }
  }
  for (auto& r : refresh_)
    if (r->index == index) {
      ev_timer_set(&r->timer, again, 0);
      ev_timer_start(loop_, &r->timer);
    }
}

void Cluster::sweep_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<Cluster*>(w->data)->sweep();
}

void Cluster::sweep() {
  // From a timer: outside every callback of the pools destroyed here.
  for (auto& pool : retiring_)
    while (pool->connections().close_one_idle()) {
    }
  std::erase_if(retiring_, [](const std::unique_ptr<UpstreamPool>& p) { return p->unused(); });
  if (retiring_.empty())
    ev_timer_stop(loop_, &sweep_);
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
