#pragma once
// One route's cache on one worker: its settings, its store, its counts, and the fetches in
// flight that other misses for the same key may wait on (request collapsing: Varnish's
// coalescing, Pingora's cache lock). The loop's own: a hit takes no lock. A miss for a key
// another worker is fetching waits for that fetch (cache_shared_fills.h): the one lock, on
// misses only, and a mailbox the other worker drops the stored response into.
#include "cache/disk_store.h"
#include "cache/memory_store.h"
#include "filters/cache_settings.h"
#include "filters/cache_shared_fills.h"
#include "metrics/worker_metrics.h"
#include "routing/filter.h"

#include <ev.h>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace portico::filters {

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
  // Another worker makes the fetch; this one waits for its stored response.
  bool remote() const { return remote_; }
  void wait(Waiter* w) { waiters_.push_back(w); }
  void leave(Waiter* w) { std::erase(waiters_, w); }

private:
  friend class CacheZone;
  std::string key_;
  std::shared_ptr<cache::StoredResponse> response_;
  std::vector<Waiter*> waiters_;
  bool remote_ = false;
  bool claimed_ = false;       // the other workers know of it (SharedFills): its end is told them
  SharedFills::Wanted wanted_; // set while another worker waits on it: its body is passed on
};

class CacheZone final : public SharedFills::Member {
public:
  CacheZone(const CacheSettings& s, metrics::WorkerMetrics& m)
      : settings(s), store(s.memory, s.max_variants), metrics(m.cache()) {}
  ~CacheZone();
  // The worker's loop, where the other workers' fills are handed over, and the directory's
  // store opened: set when the worker starts the router, on its thread.
  void attach(struct ev_loop* loop);

  // The key's variants: in memory, else read back from disk into memory; null when none.
  cache::Variants* find(std::string_view key);
  // Stores r, complete, as a variant of key, in memory and on disk.
  void put(std::string_view key, std::shared_ptr<cache::StoredResponse> r);
  void erase(std::string_view key);

  // The fetch in flight for key here, or null.
  CacheFill* fill_for(std::string_view key);
  // A fill for key, none being in flight here: this request's fetch, for others to wait on,
  // or (remote()) a wait for another worker's fetch of it.
  CacheFill* start_fill(std::string_view key);
  // The fetch's response is being stored: its waiters are answered from it, and so are
  // misses that come while it lasts.
  void share_fill(CacheFill* fill, std::shared_ptr<cache::StoredResponse> r);
  // The fetch is over, stored as done (null: not stored). Waiters left go upstream;
  // pass_until (when not 0): the key's later misses go upstream without waiting until then.
  void end_fill(CacheFill* fill, time_t pass_until,
                std::shared_ptr<cache::StoredResponse> done = nullptr);
  // The fetch's body grew by data: the other workers streaming it hear.
  void grow_fill(CacheFill* fill, std::string_view data) {
    if (fill->wanted_ && fill->wanted_->load(std::memory_order_relaxed))
      settings.fills->grow(fill->key_, this, *fill->response_, data);
  }
  // SharedFills::Member, from the fetching worker's thread.
  void fill_done(const std::string& key, std::shared_ptr<cache::StoredResponse> r) override;
  void fill_head(const std::string& key, const cache::StoredResponse& head) override;
  void fill_data(const std::string& key, std::string_view data) override;
  void fill_wanted(const std::string& key) override;

  // A background revalidation of key may start at now: none is under way (one that has not
  // ended within a minute is taken as lost).
  bool start_revalidation(const std::string& key, time_t now);
  void end_revalidation(const std::string& key) {
    if (!revalidating_.empty())
      revalidating_.erase(key);
  }
  // Drops the stored responses of r's URL (with any key fields), or of every URL it begins.
  size_t purge(const routing::PurgeRequest& r);
  // Reports what the store holds to the metrics, after a change to it.
  void stored();

  const CacheSettings& settings;
  cache::MemoryStore store;
  metrics::CacheMetrics& metrics;
  std::shared_ptr<cache::DiskStore> disk; // null: memory only

private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<CacheFill>, Hash, std::equal_to<>> fills_;
  static void mailbox_cb(struct ev_loop* loop, ev_async* w, int revents);
  void take_mailbox();
  struct ev_loop* loop_ = nullptr;
  ev_async mailbox_ready_;
  // What another worker's fetch sends: a head to stream (a copy, its body empty), a piece of
  // its body, its end (the complete response; null when not stored); or, to the fetching
  // worker, that another waits on its fetch.
  struct Letter {
    enum Kind : uint8_t { HEAD, DATA, DONE, WANTED } kind;
    std::string key;
    std::shared_ptr<cache::StoredResponse> response;
    std::string data;
  };
  void post(Letter l);
  void streamed(Letter& l, CacheFill* fill);
  std::mutex mailbox_mu_; // the fetching worker's thread and this one, on misses only
  std::vector<Letter> mailbox_;
  std::unordered_map<std::string, time_t> revalidating_; // key -> when it started
  int64_t reported_bytes_ = 0, reported_objects_ = 0;
  uint64_t reported_evictions_ = 0;
};

} // namespace portico::filters
