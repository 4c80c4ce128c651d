#pragma once
// A cache's directory on disk, as nginx's proxy_cache_path keeps one: each stored response in
// a file of its own (stored_file.h), DIR/ab/abcdef0123456789, named by a hash of its key and
// selecting fields, and an index in memory of the keys that have files, bounded in bytes (whole
// blocks) by S3-FIFO (s3_fifo.h) as the memory store is; an eviction deletes files.
//
// One store per directory, shared by the workers: each worker's memory store sits in front of
// it, so a hit in memory never comes here; a miss there takes this store's mutex for an index
// lookup (the file is opened and read outside it), as nginx's workers share their keys zone.
// A file is written whole under a temporary name, then renamed: one under its own name is
// never half-written, and a crash leaves only temporaries, deleted when the directory is read
// back. After a restart a thread of the store's own reads the index back from the files while
// the workers serve (a key not read back yet is a miss meanwhile). The store outlives
// configuration loads: a reload that keeps the directory keeps its store. Reads and writes of
// files block the worker that makes them, as nginx's do without aio threads; the page cache
// makes the common read a copy from memory.
#include "cache/s3_fifo.h"
#include "cache/stored_response.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

namespace portico::cache {

class DiskStore {
public:
  // The store of dir: the one the process has (capacity applied) or a new one, its index
  // being read back.
  static std::shared_ptr<DiskStore> open(const std::string& dir, size_t capacity,
                                         size_t max_variants);
  DiskStore(std::string dir, size_t capacity, size_t max_variants);
  ~DiskStore();
  DiskStore(const DiskStore&) = delete;
  DiskStore& operator=(const DiskStore&) = delete;

  // key's stored variants read from their files, the newest first (counted as a read); a
  // damaged file is deleted and forgotten. Empty when none.
  std::vector<std::shared_ptr<StoredResponse>> load(std::string_view key);
  // Writes r, whose body is complete, as a variant of key.
  void save(std::string_view key, const StoredResponse& r);
  bool erase(std::string_view key);
  // Erases each key starting with prefix; how many.
  size_t erase_prefix(std::string_view prefix);

  bool loading() const { return loading_.load(std::memory_order_acquire); }
  size_t objects() const;
  size_t used_bytes() const;
  const std::string& path() const { return path_; }

private:
  struct File {
    uint64_t name;
    uint64_t size;
  };
  struct Entry {
    std::vector<File> files; // the newest first
  };
  std::string file_path(uint64_t name) const;
  void unlink_file(uint64_t name);
  // Under mu_.
  Entry take(const std::string& key);
  void put_back(const std::string& key, Entry e);
  void report();
  bool erased_while_reading(const std::string& key) const;
  // The reader thread.
  void read_back();
  void read_back_one(const std::string& subdir, const char* entry);

  std::string path_;
  size_t max_variants_;
  mutable std::mutex mu_;
  S3Fifo<Entry> index_;
  size_t objects_ = 0;
  // Erased while the index is read back: a file found for them afterwards is an old one.
  std::unordered_set<std::string> erased_keys_;
  std::vector<std::string> erased_prefixes_;
  int64_t reported_objects_ = 0, reported_bytes_ = 0;
  std::atomic<bool> loading_{true}, stop_{false};
  std::string tag_;                      // this store's temporaries, apart from a crash's
  std::atomic<uint64_t> temporaries_{0}; // names writes in flight apart
  std::thread reader_;
};

} // namespace portico::cache
