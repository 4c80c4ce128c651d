#pragma once
// One worker thread's view of a configured cluster: a pool per endpoint address, and the
// choice of one for each request (least outstanding requests, round robin among equals).
// Endpoints given by name are resolved with the worker's DnsResolver and re-resolved when the
// answer's TTL runs out; a name is as many pools as it has addresses (a Kubernetes headless
// Service: one per pod), added and removed as the answers change. A removed address gets no
// new request; its pool goes once the requests on it have finished. Requests wait in the
// name's first pool until a first answer arrives.
#include "config/config.h"
#include "core/xorshift.h"
#include "upstream/hash_ring.h"
#include "upstream/hedge_delay.h"
#include "upstream/maglev_table.h"
#include "upstream/outlier_detector.h"
#include "upstream/upstream_pool.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace portico::upstream {

class DnsResolver;

// What a request brings to a cluster's pick: its hash_on key's hash (lb ring_hash or maglev;
// none: an endpoint drawn by weight) and its sticky cookie's value.
struct Affinity {
  uint64_t hash = 0;
  bool hashed = false;
  std::string_view sticky;
};

class Cluster {
public:
  // worker_index of worker_count: how this worker's share of max_connections is computed.
  // tls: the cluster's TLS client context ([[cluster]] tls), or null.
  Cluster(struct ev_loop* loop, core::DeferredQueue& deferred, DnsResolver& resolver,
          const config::ClusterConfig& cfg, int worker_index, int worker_count,
          metrics::ClusterMetrics& metrics, SSL_CTX* tls = nullptr);
  metrics::ClusterMetrics& metrics() const { return metrics_; }
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  UpstreamPool& pick(const Affinity& a = {});
  // Another endpoint than avoid for a hedge, by the usual balancing; null when there is none
  // usable.
  UpstreamPool* pick_other(const UpstreamPool& avoid);
  // Seconds a request waits for its response head before it is hedged.
  double hedge_delay() { return hedge_delay_.get(cfg_.hedge, metrics_.first_byte, ev_now(loop_)); }
  bool hashes() const {
    return cfg_.lb == config::LoadBalancing::RING_HASH || cfg_.lb == config::LoadBalancing::MAGLEV;
  }
  // Takes a place under circuit breaker b, if the cluster has such a limit; false (counted as
  // an overflow) when it is full. A place taken is given back with leave(b).
  bool enter(metrics::Breaker b) {
    if (!counted(b))
      return true;
    auto i = static_cast<size_t>(b);
    int limit = limit_of(b);
    if (breakers_->open[i].fetch_add(1, std::memory_order_relaxed) >= limit && limit > 0) {
      breakers_->open[i].fetch_sub(1, std::memory_order_relaxed);
      breakers_->overflows[i].fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    return true;
  }
  void leave(metrics::Breaker b) {
    if (counted(b))
      breakers_->open[static_cast<size_t>(b)].fetch_sub(1, std::memory_order_relaxed);
  }
  // Whether the retry budget ([[cluster]] retry budget_percent) has room for one more retry
  // in flight; retrying: the asking request holds a place already. Counted when not.
  bool retry_budget_allows(bool retrying) {
    const auto& rc = cfg_.retry;
    if (rc.budget_percent <= 0)
      return true;
    int64_t requests = breakers_->open[static_cast<size_t>(metrics::Breaker::MAX_REQUESTS)].load(
        std::memory_order_relaxed);
    int64_t retries = breakers_->open[static_cast<size_t>(metrics::Breaker::MAX_RETRIES)].load(
                          std::memory_order_relaxed) -
                      (retrying ? 1 : 0);
    if (retries < std::max<int64_t>(rc.budget_min_concurrency, requests * rc.budget_percent / 100))
      return true;
    breakers_->budget_overflows.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // Seconds before retry n (1, 2, ...): full jitter below base x 2^(n-1), at most backoff_max.
  double backoff(int n) {
    double ceiling =
        std::min(cfg_.retry.backoff_max, cfg_.retry.backoff_base * double(1 << (n - 1)));
    return ceiling * core::unit_fraction(next_random());
  }
  // An attempt on p ended: its status (100-599), or 0 for a gateway error of the endpoint's
  // (a failed connect, a reset, a timeout). For outlier detection, when the cluster has it.
  void outcome(const UpstreamPool& p, int status) {
    if (outliers_)
      outliers_->record(p.endpoint_index,
                        status == 0 || status == 502 || status == 503 || status == 504
                            ? OutlierDetector::Outcome::GATEWAY_ERROR
                        : status >= 500 ? OutlierDetector::Outcome::FAILURE_5XX
                                        : OutlierDetector::Outcome::SUCCESS,
                        ev_now(loop_));
  }
  const config::ClusterConfig& config() const { return cfg_; }
  // The pools requests may go to; those of removed addresses are not among them.
  const std::vector<std::unique_ptr<UpstreamPool>>& pools() const { return pools_; }

  // This worker's share of a whole-proxy connection limit: the shares add up to the limit,
  // and no worker gets none (so a limit below the worker count is exceeded, by design).
  static int share(int max_connections, int worker_index, int worker_count);

private:
  struct NameRefresh {
    Cluster* cluster;
    size_t index;
    ev_timer timer;
  };
  static void refresh_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void sweep_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void resolve(size_t index);
  void on_resolved(size_t index, std::vector<core::SocketAddress> addresses, int ttl);
  // The pools of removed addresses that nothing uses any more are destroyed.
  void sweep();
  UpstreamPool* pick_least_request(double now, bool healthy_only);
  UpstreamPool* pick_round_robin(double now, bool healthy_only);
  UpstreamPool* pick_random_two(double now, bool healthy_only);
  UpstreamPool* random_by_weight(double now, bool healthy_only, const UpstreamPool* other);
  // The consistent hash's endpoint for hash among the usable ones, or the sticky cookie's;
  // null when it is down (the pick goes on as usual).
  UpstreamPool* pick_hashed(uint64_t hash, double now);
  UpstreamPool* pick_sticky(std::string_view id, double now);
  // After the pools changed: their sticky ids and the hash table, built again.
  void rebuild_members();
  UpstreamPool& add_pool(const core::EndpointSpec& spec, size_t endpoint);

  struct ev_loop* loop_;
  DnsResolver& resolver_;
  const config::ClusterConfig& cfg_;
  metrics::ClusterMetrics& metrics_;
  core::DeferredQueue& deferred_;
  SSL_CTX* tls_;
  int limit_;    // per address, this worker's share of max_connections
  uint64_t rng_; // random_two's xorshift state
  std::vector<std::unique_ptr<UpstreamPool>> pools_;
  std::vector<size_t> endpoint_of_; // per pool: its index in cfg_.endpoints
  std::vector<std::unique_ptr<UpstreamPool>> retiring_;
  ev_timer sweep_; // while retiring_ is not empty
  std::vector<std::unique_ptr<NameRefresh>> refresh_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true); // guards resolver callbacks
  size_t next_ = 0;
  bool members_changed_ = true;     // pools added, removed or given an address since
  std::vector<size_t> member_pool_; // hash table member -> index in pools_
  HashRing ring_;                   // lb = ring_hash
  MaglevTable maglev_;              // lb = maglev
  HedgeDelay hedge_delay_;
  std::shared_ptr<OutlierDetector> outliers_;    // the process's, with outlier_detection
  metrics::BreakerCounters* breakers_ = nullptr; // the process's, with breakers or a budget
  uint64_t next_random() { return core::xorshift64(rng_); }
  // Whether b's places are counted: under a limit, or (requests and retries) for a budget.
  bool counted(metrics::Breaker b) const {
    return breakers_ && (limit_of(b) > 0 ||
                         (cfg_.retry.budget_percent > 0 && b != metrics::Breaker::MAX_PENDING));
  }
  int limit_of(metrics::Breaker b) const {
    if (!breakers_)
      return 0;
    return b == metrics::Breaker::MAX_PENDING    ? cfg_.breakers.max_pending
           : b == metrics::Breaker::MAX_REQUESTS ? cfg_.breakers.max_requests
                                                 : cfg_.breakers.max_retries;
  }
};

} // namespace portico::upstream
