#pragma once
// Static files under a root directory (portico-backend's --document-root): index.html for
// directories, content types by extension, ETag and Last-Modified with 304, single byte
// ranges, HEAD, and nothing outside the root. In the shared server core, for both programs.
//
// One StaticFiles lives in each worker (a backend worker process). Small files are kept in memory
// with their header values ready, so that serving one from the cache costs no syscall and no
// allocation; an entry is checked against the disk at most once a second. Larger files are read
// with pread per request and streamed as the client takes them.
#include "server/exchange.h"

#include <cstdint>
#include <ctime>
#include <list>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <unordered_map>

namespace portico::server {

class StaticFiles {
public:
  static constexpr size_t kMaxCachedFile = 256 * 1024;
  static constexpr size_t kCacheBudget = 32 << 20; // bytes of content and keys per worker
  static constexpr size_t kMaxCacheEntries = 8192;
  static constexpr size_t kMaxCachedKey = 1024;
  static constexpr double kRevalidateAfter = 1.0; // seconds between stat()s of an entry

  explicit StaticFiles(std::string root);
  ~StaticFiles();
  StaticFiles(const StaticFiles&) = delete;
  StaticFiles& operator=(const StaticFiles&) = delete;

  bool ok() const { return root_fd_ >= 0; }
  // Answers the request (or starts streaming the file); returns the response's status.
  int serve(Exchange& ex);

  // The validators and type of one file version, formatted once.
  struct FileMeta {
    std::string_view content_type;
    int64_t size = 0;
    time_t mtime = 0;
    char etag[48]; // strong: "<mtime ns hex>-<size hex>", quotes included
    size_t etag_len = 0;
    char last_modified[29]; // IMF-fixdate
    std::string_view etag_view() const { return {etag, etag_len}; }
    std::string_view last_modified_view() const { return {last_modified, sizeof last_modified}; }
  };

private:
  // An open regular file (or directory, on the way to its index) inside the root.
  struct Target {
    int fd = -1;
    bool directory = false;
    std::string_view content_type;
    dev_t dev = 0;
    ino_t ino = 0;
    int64_t size = 0;
    timespec mtime{};
  };

  struct CacheEntry {
    std::string key; // the request path as sent, before decoding
    std::string content;
    FileMeta meta;
    dev_t dev = 0;
    ino_t ino = 0;
    timespec mtime{};
    double checked_at = 0; // ev_now() of the last stat
  };
  using Lru = std::list<CacheEntry>;

  // Maps a request path to an open file and returns 0, or answers the request itself and
  // returns the status it answered with (404, 301...).
  int resolve(Exchange& ex, std::string_view raw_path, Target& out);
  // realpath() of fs_path checked to lie under the root, then opened beneath it: a regular
  // file or a directory. Returns 0 or the status to answer with.
  int open_beneath(const char* fs_path, Target& out);
  int open_at_root(const char* relative);
  int serve_cached(Exchange& ex, CacheEntry& e);
  // Reads a small file into the cache under key; nullptr when it changed while being read.
  CacheEntry* load(std::string_view key, const Target& t, double now);
  void erase(Lru::iterator it);
  // Budget accounting: the bytes held plus a guess at the list node, map node and strings.
  static constexpr size_t kEntryOverhead = 256;
  static size_t cost(const CacheEntry& e) {
    return e.key.size() + e.content.size() + kEntryOverhead;
  }

  std::string root_; // canonical, no trailing slash (except for "/" itself)
  int root_fd_ = -1; // O_PATH, the anchor of every open
  bool have_openat2_ = true;
  Lru lru_;                                                   // most recently used first
  std::unordered_map<std::string_view, Lru::iterator> index_; // keys view CacheEntry::key
  size_t cached_bytes_ = 0;
};

} // namespace portico::server
