#pragma once
// One route's cache on one worker: its settings, its store, its counts, and the fetches in
// flight that other misses for the same key may wait on (request collapsing: Varnish's
// coalescing, Pingora's cache lock). The loop's own: no locks.
#include "cache/memory_store.h"
#include "filters/cache_settings.h"

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace portico::metrics {
class WorkerMetrics;
}

namespace portico::filters {

struct CacheCounts {
  uint64_t hits = 0;        // answered from the store, fresh (or stale the request allowed)
  uint64_t misses = 0;      // went upstream
  uint64_t revalidated = 0; // a 304 refreshed a stored response
  uint64_t stale = 0;       // answered stale, the upstream failing (stale-if-error)
  uint64_t collapsed = 0;   // answered from another request's fetch
};

// A fetch of one key that misses may wait on: until its response head says whether it is
// stored, then they read its body as it arrives (or go upstream themselves when it is not).
class CacheFill {
public:
  class Waiter {
  public:
    // The head is known and stored: response() is readable (its body may still grow).
    virtual void fill_ready(CacheFill& fill) = 0;
    // Nothing to share: go upstream.
    virtual void fill_gone() = 0;

  protected:
    ~Waiter() = default;
  };

  const std::shared_ptr<cache::StoredResponse>& response() const { return response_; }
  void wait(Waiter* w) { waiters_.push_back(w); }
  void leave(Waiter* w) { std::erase(waiters_, w); }

private:
  friend class CacheZone;
  std::string key_;
  std::shared_ptr<cache::StoredResponse> response_;
  std::vector<Waiter*> waiters_;
};

class CacheZone {
public:
  CacheZone(const CacheSettings& s, metrics::WorkerMetrics&)
      : settings(s), store(s.memory, s.max_variants) {}

  // The fetch in flight for key, or null.
  CacheFill* fill_for(std::string_view key);
  // A new fetch of key for others to wait on; null when one is in flight.
  CacheFill* start_fill(std::string_view key);
  // The fetch's response is being stored: its waiters are answered from it, and so are
  // misses that come while it lasts.
  void share_fill(CacheFill* fill, std::shared_ptr<cache::StoredResponse> r);
  // The fetch is over. Waiters left go upstream; pass_until (when not 0): the key's later
  // misses go upstream without waiting until then.
  void end_fill(CacheFill* fill, time_t pass_until);

  const CacheSettings& settings;
  cache::MemoryStore store;
  CacheCounts counts;

private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<CacheFill>, Hash, std::equal_to<>> fills_;
};

} // namespace portico::filters
