#pragma once
// One worker thread's share of Portico's metrics: fixed arrays indexed by route, cluster,
// protocol and status class, made once from the configuration, so recording is an index and a
// plain store, never a lookup by name. Only the owning worker writes; the admin thread reads
// with relaxed loads and merges the shards at scrape time.
#include "config/config.h"
#include "core/counter.h"
#include "metrics/error_kinds.h"
#include "metrics/histogram.h"
#include "metrics/request_counts.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace portico::metrics {

using Counter = core::Counter;

// A level set by its one writer and read elsewhere.
class Gauge {
public:
  void set(int64_t v) { v_.store(v, std::memory_order_relaxed); }
  // By its one writer (no read-modify-write instruction): several pools, one per address of
  // a name, add their share to one endpoint's gauge.
  void add(int64_t d) {
    v_.store(v_.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  }
  int64_t get() const { return v_.load(std::memory_order_relaxed); }

private:
  std::atomic<int64_t> v_{0};
};

// One endpoint's pool in one worker.
struct EndpointGauges {
  Gauge idle, busy, waiting;
  Gauge connect_failures; // in a row; 0 once a connect succeeds
  Gauge down_until;       // ev_now() until which the endpoint is passed over, 0 = never was
  Gauge unhealthy;        // addresses failing their active health check (health_check)
};

// The client's protocol, as the requests counter labels it.
enum class Protocol : uint8_t { H1, H2C, H2, H3, COUNT };
const char* to_string(Protocol p);

// Why requests were sent upstream again: upstream::RetryReason's values in order.
inline constexpr const char* kRetryReasons[] = {"connect_failed", "refused_stream", "idempotent",
                                                "non_idempotent"};
inline constexpr size_t kRetryReasonCount = std::size(kRetryReasons);

// What became of hedged tries ([[cluster]] hedge): their answer was the one used, the first
// try's came first (the hedge cancelled), or the hedge failed.
enum class HedgeOutcome : uint8_t { WON, LOST, FAILED };
inline constexpr const char* kHedgeOutcomes[] = {"won", "lost", "failed"};
inline constexpr size_t kHedgeOutcomeCount = std::size(kHedgeOutcomes);

// What became of mirrored copies of requests (a route's mirror): the shadow answered (below
// 500), failed (5xx, or no answer), or the copy was abandoned (its body past max_body, or the
// client gone before its end).
enum class MirrorOutcome : uint8_t { ANSWERED, FAILED, ABANDONED };
inline constexpr const char* kMirrorOutcomes[] = {"answered", "failed", "abandoned"};
inline constexpr size_t kMirrorOutcomeCount = std::size(kMirrorOutcomes);

struct RouteMetrics {
  explicit RouteMetrics(const std::vector<double>* bounds) : duration(bounds) {}
  RequestCounts requests;             // by listener, protocol, code and who answered
  Histogram duration;                 // first byte in to last byte out
  Counter bytes_received, bytes_sent; // bodies
};

struct ClusterMetrics {
  ClusterMetrics(const std::vector<double>* bounds, size_t endpoints)
      : queue_wait(bounds), connect(bounds), first_byte(bounds), upstream(bounds),
        endpoints(endpoints) {}
  Histogram queue_wait; // waiting in the pool for a connection
  Histogram connect;    // connect(2) to established, fresh connections only
  Histogram first_byte; // request handed to the connection to the response head
  Histogram upstream;   // request handed to the connection to the response's last byte
  ErrorCounters errors; // error_kinds.h
  Counter retries[kRetryReasonCount];
  Counter hedges[kHedgeOutcomeCount];
  Counter mirrored[kMirrorOutcomeCount]; // copies this cluster got as a route's mirror
  std::vector<EndpointGauges> endpoints; // in configuration order
};

// Responses compressed by the compress filter, and their body bytes before and after, by
// coding (compression::Encoding's order: gzip, br, zstd).
inline constexpr const char* kEncodings[] = {"gzip", "br", "zstd"};
inline constexpr size_t kEncodingCount = std::size(kEncodings);
struct CompressionMetrics {
  Counter responses[kEncodingCount];
  Counter bytes_in[kEncodingCount], bytes_out[kEncodingCount];
};

// The cache filter's requests by what became of them, and what its stores hold.
enum class CacheResult : uint8_t { HIT, MISS, REVALIDATED, STALE, COLLAPSED, BYPASS };
inline constexpr const char* kCacheResults[] = {"hit",   "miss",      "revalidated",
                                                "stale", "collapsed", "bypass"};
inline constexpr size_t kCacheResultCount = std::size(kCacheResults);
struct CacheMetrics {
  Counter results[kCacheResultCount];
  Counter evictions;
  core::Level stored_bytes, stored_objects;
  core::Level waiting; // misses waiting on another request's fetch of their key
  void count(CacheResult r) { results[static_cast<size_t>(r)].inc(); }
};

// What the caches' directories hold over the process: one directory's store is shared by
// every worker (cache/disk_store.h), so it is counted here once, not in a shard.
struct DiskCacheLevels {
  std::atomic<int64_t> bytes{0}, objects{0};
};
DiskCacheLevels& disk_cache_levels();

class WorkerMetrics;

// One endpoint's pool gauges summed over every worker's shard, for /status and /metrics alike.
// Its health is each worker's last connect: one worker whose last connect failed is enough to
// call the endpoint down (connect_failures is the largest run of them).
struct EndpointTotals {
  int64_t idle = 0, busy = 0, waiting = 0, connect_failures = 0;
  int64_t unhealthy = 0; // addresses failing health checks, over the workers
  bool up() const { return connect_failures == 0; }
};
EndpointTotals endpoint_totals(std::span<const WorkerMetrics* const> shards, size_t cluster,
                               size_t endpoint);

class WorkerMetrics {
public:
  WorkerMetrics(const config::Config& cfg, const std::vector<double>* bounds);
  // After a reload: a kept cluster or route group (kept_clusters[i], kept_routes[i] >= 0,
  // config_diff.h) goes on counting where it did in previous, shared with the generation
  // whose exchanges are still under way (so none of theirs goes uncounted); the rest start
  // at zero.
  WorkerMetrics(const config::Config& cfg, const std::vector<double>* bounds,
                const WorkerMetrics& previous, const std::vector<int>& kept_clusters,
                const std::vector<int>& kept_routes);
  // The routes' series groups (config::Config::route_stats), the unmatched requests' last.
  RouteMetrics& route(size_t i) { return *routes_[i]; }
  ClusterMetrics& cluster(size_t i) { return *clusters_[i]; }
  size_t route_count() const { return routes_.size(); }
  size_t cluster_count() const { return clusters_.size(); }
  const RouteMetrics& route(size_t i) const { return *routes_[i]; }
  const ClusterMetrics& cluster(size_t i) const { return *clusters_[i]; }
  // Kept across reloads: they depend on no part of the configuration.
  CompressionMetrics& compression() { return *compression_; }
  const CompressionMetrics& compression() const { return *compression_; }
  CacheMetrics& cache() { return *cache_; }
  const CacheMetrics& cache() const { return *cache_; }

private:
  std::shared_ptr<CacheMetrics> cache_ = std::make_shared<CacheMetrics>();
  std::shared_ptr<CompressionMetrics> compression_ = std::make_shared<CompressionMetrics>();
  std::vector<std::shared_ptr<RouteMetrics>> routes_;
  std::vector<std::shared_ptr<ClusterMetrics>> clusters_;
};

} // namespace portico::metrics
