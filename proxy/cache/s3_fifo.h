#pragma once
// The memory cache's eviction: S3-FIFO (Yang et al., SOSP 2023), bounded in bytes. A new key
// enters a small FIFO (a tenth of the budget); one read again before it leaves moves to the
// main FIFO, one that was not is dropped and its hash kept in a ghost FIFO, so that coming back
// soon takes it straight to main. Main gives each entry read since its last pass another pass.
// A scan of keys read once flows through the small FIFO and leaves main alone, where plain LRU
// would flush the whole working set. One per thread of use: no locks.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace portico::cache {

template <typename V> class S3Fifo {
public:
  // evicted(key, value) hears every entry dropped to make room (not those erased).
  using Evicted = std::function<void(const std::string&, V&)>;

  explicit S3Fifo(size_t capacity_bytes, Evicted evicted = {})
      : capacity_(capacity_bytes), small_capacity_(capacity_bytes / 10),
        evicted_(std::move(evicted)) {}
  S3Fifo(const S3Fifo&) = delete;
  S3Fifo& operator=(const S3Fifo&) = delete;

  // The value for key, counted as a read; null when absent.
  V* find(std::string_view key) {
    auto it = entries_.find(key);
    if (it == entries_.end())
      return nullptr;
    if (it->second.freq < 3)
      ++it->second.freq;
    return &it->second.value;
  }
  // The same, not counted as a read (the owner updating its own entry).
  V* peek(std::string_view key) {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second.value;
  }
  template <typename F> void for_each_key(F&& f) const {
    for (const auto& [k, e] : entries_)
      f(k);
  }
  // Stores value under key (replacing one there) at cost bytes; false, nothing stored, when
  // it could never fit.
  bool insert(const std::string& key, V value, size_t cost) {
    if (cost > capacity_)
      return false;
    erase(key);
    while (used_ + cost > capacity_)
      evict();
    size_t h = std::hash<std::string>{}(key);
    bool main = ghost_set_.erase(h) > 0;
    uint64_t gen = ++generation_;
    entries_.emplace(key, Entry{std::move(value), cost, gen, 0, main});
    (main ? main_ : small_).push_back({key, gen});
    (main ? main_used_ : small_used_) += cost;
    used_ += cost;
    return true;
  }
  bool erase(const std::string& key) {
    auto it = entries_.find(key);
    if (it == entries_.end())
      return false;
    // Its place in a FIFO goes when the FIFO reaches it: a place whose key is gone, or was
    // stored again since (another generation), is skipped then.
    remove(it);
    return true;
  }

  // A new budget: entries are evicted (and heard of) until what is left fits.
  void resize(size_t capacity_bytes) {
    capacity_ = capacity_bytes;
    small_capacity_ = capacity_bytes / 10;
    while (used_ > capacity_)
      evict();
  }

  size_t size() const { return entries_.size(); }
  size_t used_bytes() const { return used_; }
  size_t capacity() const { return capacity_; }

private:
  struct Entry {
    V value;
    size_t cost;
    uint64_t gen; // which insert made it: a FIFO place of an earlier one is stale
    uint8_t freq;
    bool main;
  };
  struct Place {
    std::string key;
    uint64_t gen;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, Entry, Hash, std::equal_to<>>;

  // The entry at the FIFO's head, stale places skipped (popped).
  typename Map::iterator head_of(std::deque<Place>& q, bool main) {
    while (!q.empty()) {
      auto it = entries_.find(q.front().key);
      if (it != entries_.end() && it->second.gen == q.front().gen && it->second.main == main)
        return it;
      q.pop_front();
    }
    return entries_.end();
  }

  // Out of the accounts and the map; its FIFO place goes stale.
  void remove(typename Map::iterator it) {
    (it->second.main ? main_used_ : small_used_) -= it->second.cost;
    used_ -= it->second.cost;
    entries_.erase(it);
  }
  // Evicted to make room: the owner hears of it first.
  void drop(typename Map::iterator it) {
    if (evicted_)
      evicted_(it->first, it->second.value);
    remove(it);
  }

  void evict() {
    if (small_used_ > small_capacity_ || main_used_ == 0)
      evict_small();
    else
      evict_main();
  }

  void evict_small() {
    auto it = head_of(small_, false);
    if (it == entries_.end()) {
      evict_main();
      return;
    }
    Place place = std::move(small_.front());
    small_.pop_front();
    if (it->second.freq > 1) { // read again while small: promoted
      it->second.main = true;
      it->second.freq = 0;
      small_used_ -= it->second.cost;
      main_used_ += it->second.cost;
      main_.push_back(std::move(place));
      return;
    }
    remember(it->first);
    drop(it);
  }

  void evict_main() {
    for (;;) {
      auto it = head_of(main_, true);
      if (it == entries_.end()) {
        evict_small();
        return;
      }
      Place place = std::move(main_.front());
      main_.pop_front();
      if (it->second.freq > 0) { // read since its last pass: another pass
        --it->second.freq;
        main_.push_back(std::move(place));
        continue;
      }
      drop(it);
      return;
    }
  }

  // The ghost FIFO holds as many hashes as the cache holds entries (16 at least).
  void remember(const std::string& key) {
    size_t h = std::hash<std::string>{}(key);
    if (ghost_set_.insert(h).second)
      ghost_.push_back(h);
    size_t limit = std::max<size_t>(entries_.size(), 16);
    while (ghost_.size() > limit) {
      ghost_set_.erase(ghost_.front());
      ghost_.pop_front();
    }
  }

  size_t capacity_, small_capacity_;
  size_t used_ = 0, small_used_ = 0, main_used_ = 0;
  uint64_t generation_ = 0;
  Map entries_;
  std::deque<Place> small_, main_;
  std::deque<size_t> ghost_;
  std::unordered_set<size_t> ghost_set_;
  Evicted evicted_;
};

} // namespace portico::cache
