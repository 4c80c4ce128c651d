#include "upstream/cluster.h"

#include "core/error_log.h"
#include "core/proxy_protocol.h"
#include "upstream/dns_resolver.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <xxhash.h>

namespace portico::upstream {

namespace {
constexpr double kMinTtl = 1, kMaxTtl = 300, kDefaultTtl = 30;
constexpr double kSweepEvery = 1;

bool same(const core::SocketAddress& a, const core::SocketAddress& b) {
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
      tls_(tls), limit_(share(cfg.max_connections, worker_index, worker_count)),
      // Each worker and process its own sequence: backoffs drawn alike would retry together.
      rng_((static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}()) |
           (static_cast<uint64_t>(worker_index) << 1 | 1)) {
  ev_init(&sweep_, sweep_cb);
  sweep_.data = this;
  if (cfg.outlier.enabled)
    outliers_ = OutlierDetector::of(cfg);
  if (cfg.breakers.enabled || cfg.retry.budget_percent > 0)
    breakers_ = &metrics::breaker_counters(cfg.name);
  for (size_t i = 0; i < cfg.endpoints.size(); ++i) {
    add_pool(*core::parse_endpoint(cfg.endpoints[i]), i); // validated with the config
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

UpstreamPool& Cluster::add_pool(const core::EndpointSpec& spec, size_t endpoint) {
  pools_.push_back(std::make_unique<UpstreamPool>(loop_, deferred_, spec, cfg_, limit_, metrics_,
                                                  metrics_.endpoints[endpoint], tls_));
  endpoint_of_.push_back(endpoint);
  members_changed_ = true;
  pools_.back()->weight = endpoint < cfg_.weights.size() ? cfg_.weights[endpoint] : 1;
  pools_.back()->endpoint_index = endpoint;
  if (outliers_)
    pools_.back()->ejected_until = &outliers_->ejected_until(endpoint);
  return *pools_.back();
}

void Cluster::resolve(size_t index) {
  core::EndpointSpec e = *core::parse_endpoint(cfg_.endpoints[index]);
  std::weak_ptr<bool> alive = alive_;
  resolver_.resolve(e.host, e.port,
                    [this, index, alive](std::vector<core::SocketAddress> a, int ttl) {
                      if (auto guard = alive.lock(); guard && *guard)
                        on_resolved(index, std::move(a), ttl);
                    });
}

void Cluster::on_resolved(size_t index, std::vector<core::SocketAddress> addresses, int ttl) {
  double again = kRetryAfterFailure;
  std::vector<size_t> mine; // this name's pools, by position in pools_
  for (size_t p = 0; p < pools_.size(); ++p)
    if (endpoint_of_[p] == index)
      mine.push_back(p);
  if (addresses.empty()) {
    bool known = pools_[mine.front()]->has_address();
    core::log::write_about(core::log::Level::WARN, core::log::Kind::DNS, cfg_.name,
                           "cluster %s: %s did not resolve%s; asking again in %g s",
                           cfg_.name.c_str(), pools_[mine.front()]->endpoint().host.c_str(),
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
            members_changed_ = true;
            placed[a] = found = true;
          }
      }
      if (!found)
        gone.push_back(p);
    }
    size_t added = 0;
    core::EndpointSpec spec = pools_[mine.front()]->endpoint();
    for (size_t a = 0; a < addresses.size(); ++a) {
      if (placed[a])
        continue;
      pools_.push_back(std::make_unique<UpstreamPool>(loop_, deferred_, spec, cfg_, limit_,
                                                      metrics_, metrics_.endpoints[index], tls_));
      pools_.back()->set_address(addresses[a]);
      pools_.back()->weight = index < cfg_.weights.size() ? cfg_.weights[index] : 1;
      pools_.back()->endpoint_index = index;
      if (outliers_)
        pools_.back()->ejected_until = &outliers_->ejected_until(index);
      endpoint_of_.push_back(index);
      ++added;
    }
    // Removed addresses drain: no new request, the ones on them finish (sweep()).
    for (auto it = gone.rbegin(); it != gone.rend(); ++it) {
      pools_[*it]->stop_health_checks();
      retiring_.push_back(std::move(pools_[*it]));
      pools_.erase(pools_.begin() + static_cast<ptrdiff_t>(*it));
      endpoint_of_.erase(endpoint_of_.begin() + static_cast<ptrdiff_t>(*it));
    }
    members_changed_ |= added || !gone.empty();
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

UpstreamPool& Cluster::pick(const Affinity& a) {
  size_t n = pools_.size();
  if (n == 1)
    return *pools_[0];
  if (members_changed_ && (hashes() || cfg_.sticky.enabled))
    rebuild_members();
  // Among the addresses neither held down after a failed connect nor failing their health
  // check; if every one is, among all (Envoy's panic mode: a request is better tried than
  // refused).
  double now = ev_now(loop_);
  if (!a.sticky.empty())
    if (UpstreamPool* p = pick_sticky(a.sticky, now))
      return *p;
  if (a.hashed)
    if (UpstreamPool* p = pick_hashed(a.hash, now))
      return *p;
  for (bool healthy_only : {true, false}) {
    UpstreamPool* p =
        cfg_.lb == config::LoadBalancing::ROUND_ROBIN  ? pick_round_robin(now, healthy_only)
        : cfg_.lb == config::LoadBalancing::RANDOM_TWO ? pick_random_two(now, healthy_only)
        : hashes() ? random_by_weight(now, healthy_only, nullptr)
                   : pick_least_request(now, healthy_only);
    if (p)
      return *p;
  }
  return *pools_[0];
}

UpstreamPool* Cluster::pick_other(const UpstreamPool& avoid) {
  UpstreamPool& p = pick();
  if (&p != &avoid && p.available(ev_now(loop_)) && p.healthy())
    return &p;
  return random_by_weight(ev_now(loop_), true, &avoid);
}

void Cluster::rebuild_members() {
  members_changed_ = false;
  // Members in the order of their ids, so that every worker builds the same table from the
  // same addresses whatever order DNS answers came in.
  std::vector<std::string> ids;
  member_pool_.clear();
  for (size_t i = 0; i < pools_.size(); ++i) {
    const UpstreamPool& p = *pools_[i];
    const auto& spec = p.endpoint();
    bool named = !spec.is_unix && !spec.numeric;
    if (named && !p.has_address())
      continue; // a name not resolved yet
    ids.push_back(named ? spec.text + "=" + core::proxy_protocol::address_text(p.address().storage)
                        : spec.text);
    member_pool_.push_back(i);
  }
  std::vector<size_t> order(ids.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ids[x] < ids[y]; });
  std::vector<HashMember> members;
  std::vector<size_t> by_order;
  for (size_t i : order) {
    UpstreamPool& p = *pools_[member_pool_[i]];
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(XXH64(ids[i].data(), ids[i].size(), 0)));
    p.sticky_id = hex;
    members.push_back({ids[i], p.weight});
    by_order.push_back(member_pool_[i]);
  }
  member_pool_ = std::move(by_order);
  if (cfg_.lb == config::LoadBalancing::RING_HASH)
    ring_.build(members);
  else if (cfg_.lb == config::LoadBalancing::MAGLEV)
    maglev_.build(members);
}

UpstreamPool* Cluster::pick_hashed(uint64_t hash, double now) {
  auto usable = [&](size_t m) {
    const UpstreamPool& p = *pools_[member_pool_[m]];
    return p.available(now) && p.healthy();
  };
  size_t m = cfg_.lb == config::LoadBalancing::MAGLEV ? maglev_.find(hash, usable)
                                                      : ring_.find(hash, usable);
  return m < member_pool_.size() ? pools_[member_pool_[m]].get() : nullptr;
}

UpstreamPool* Cluster::pick_sticky(std::string_view id, double now) {
  for (auto& p : pools_)
    if (p->sticky_id == id)
      return p->available(now) && p->healthy() ? p.get() : nullptr;
  return nullptr;
}

UpstreamPool* Cluster::pick_least_request(double now, bool healthy_only) {
  // Fewest outstanding per unit of weight (compared crosswise, no division); starting after
  // the last choice makes equal loads rotate.
  size_t n = pools_.size(), best = n;
  for (size_t k = 0; k < n; ++k) {
    size_t i = (next_ + k) % n;
    const UpstreamPool& p = *pools_[i];
    if (healthy_only && !(p.available(now) && p.healthy()))
      continue;
    if (best == n || p.load() * static_cast<size_t>(pools_[best]->weight) <
                         pools_[best]->load() * static_cast<size_t>(p.weight))
      best = i;
  }
  if (best == n)
    return nullptr;
  next_ = best + 1;
  return pools_[best].get();
}

UpstreamPool* Cluster::pick_round_robin(double now, bool healthy_only) {
  // Smooth weighted round robin (nginx's): every candidate gains its weight, the highest
  // score wins and pays the total back; 3:1:1 goes a a b a c, never a a a b c.
  UpstreamPool* best = nullptr;
  int64_t total = 0;
  for (auto& p : pools_) {
    if (healthy_only && !(p->available(now) && p->healthy()))
      continue;
    p->wrr_score += p->weight;
    total += p->weight;
    if (!best || p->wrr_score > best->wrr_score)
      best = p.get();
  }
  if (best)
    best->wrr_score -= total;
  return best;
}

UpstreamPool* Cluster::random_by_weight(double now, bool healthy_only, const UpstreamPool* other) {
  int64_t total = 0;
  auto usable = [&](const UpstreamPool& p) {
    return !healthy_only || (p.available(now) && p.healthy());
  };
  for (auto& p : pools_)
    if (p.get() != other && usable(*p))
      total += p->weight;
  if (total == 0)
    return nullptr;
  int64_t at = static_cast<int64_t>(next_random() % static_cast<uint64_t>(total));
  for (auto& p : pools_) {
    if (p.get() == other || !usable(*p))
      continue;
    if ((at -= p->weight) < 0)
      return p.get();
  }
  return nullptr;
}

UpstreamPool* Cluster::pick_random_two(double now, bool healthy_only) {
  // Power of two choices: two addresses drawn by weight, the less loaded per weight wins.
  UpstreamPool* a = random_by_weight(now, healthy_only, nullptr);
  if (!a)
    return nullptr;
  UpstreamPool* b = random_by_weight(now, healthy_only, a);
  if (!b)
    return a;
  return b->load() * static_cast<size_t>(a->weight) < a->load() * static_cast<size_t>(b->weight)
             ? b
             : a;
}

} // namespace portico::upstream
