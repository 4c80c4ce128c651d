#pragma once
// One worker's cache in memory: for each key (cache_key.h), its variants (one per set of
// selecting request fields, vary.h), bounded in bytes by S3-FIFO (s3_fifo.h) and in variants
// per key. Only the worker's loop uses it: no locks. A response is put once complete; what is
// still being fetched lives in the filling request until then (collapsing, fill.h).
#include "cache/s3_fifo.h"
#include "cache/stored_response.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace portico::cache {

struct Variants {
  std::vector<std::shared_ptr<StoredResponse>> list; // the newest first
  // Until then (seconds), the key's responses were found not storable: its misses go
  // straight upstream, without waiting on each other (Varnish's hit-for-miss).
  time_t pass_until = 0;
};

struct StoreCounts {
  uint64_t evictions = 0;
};

class MemoryStore {
public:
  MemoryStore(size_t capacity_bytes, size_t max_variants);

  // The key's variants, counted as a read; null when none.
  Variants* find(std::string_view key) { return fifo_.find(key); }
  // Adds r as a variant of key, replacing one with the same vary_key; the oldest goes when
  // there are max_variants. False when it could never fit.
  bool put(std::string_view key, std::shared_ptr<StoredResponse> r);
  // Marks key as not storable until then (what is stored for it stays).
  void pass(std::string_view key, time_t until);
  bool erase(std::string_view key);
  // Erases each key starting with prefix; how many.
  size_t erase_prefix(std::string_view prefix);

  size_t objects() const { return objects_; }
  size_t used_bytes() const { return fifo_.used_bytes(); }
  size_t capacity() const { return fifo_.capacity(); }
  const StoreCounts& counts() const { return counts_; }

  // What a key's entry costs beyond its responses: the map's node, the key twice (map and
  // FIFO place), the variant list.
  static size_t entry_cost(std::string_view key, const Variants& v);

private:
  // The key's entry, out of the FIFO and the counts (empty when absent), to be put back.
  Variants take(const std::string& key);
  S3Fifo<Variants> fifo_;
  size_t max_variants_;
  size_t objects_ = 0;
  StoreCounts counts_;
};

} // namespace portico::cache
