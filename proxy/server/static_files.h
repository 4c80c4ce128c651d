#pragma once
// Static files under a root directory, for both programs: portico-backend's --document-root
// and a proxy route's `static` action. An index file for a directory, nginx's try_files, content
// types by extension, ETag and Last-Modified with 304, a single byte range, HEAD, precompressed
// siblings (file.js.br next to file.js), Cache-Control and Expires, and nothing outside the root
// (server/static_path.h, then openat2 RESOLVE_BENEATH), no dotfiles, no directory listings.
//
// One StaticFiles per worker (and per route, in the proxy), used on its loop only. It caches what
// it opened: small files in memory with their header values formatted, so that a hit costs no
// syscall and no allocation; larger ones as an open descriptor with its metadata, handed to the
// kernel with sendfile where the connection allows (a dup per response). Each entry is checked
// against the disk at most once per revalidate_after.
#include "compression/encoding.h"
#include "server/file_response.h"
#include "server/file_sink.h"

#include <cstdint>
#include <ctime>
#include <list>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

namespace portico::server {

struct StaticOptions {
  enum class Symlinks : uint8_t {
    WITHIN_ROOT, // followed where the target lies beneath the root (realpath, then checked)
    NEVER,       // any symlink on the way is refused
    ANYWHERE,    // followed wherever they lead (the request path itself still cannot leave)
  };
  std::string root;
  std::vector<std::string> index{"index.html"}; // tried in order for a directory
  // Candidates in order, as nginx's try_files: "$uri" (a file), "$uri/" (a directory's index),
  // a path ("/index.html"); the last one is the fallback: a path, "=CODE", or "@upstream" (the
  // route's cluster answers). Empty: the path itself, a directory's index, else 404.
  std::vector<std::string> try_files;
  bool dotfiles = false; // serve names beginning with '.'
  Symlinks symlinks = Symlinks::WITHIN_ROOT;
  // Siblings looked for ("a.js.br" for "a.js"), in order of preference; served when the client
  // accepts the coding and the sibling is at least as new as the file.
  std::vector<compression::Encoding> precompressed;
  std::string cache_control;          // sent with every file response when set
  int64_t expires = -1;               // seconds: Expires (and max-age when cache_control is unset)
  size_t cache_bytes = 32 << 20;      // file contents and keys kept in memory
  size_t cache_entries = 8192;        // entries, whether held in memory or open
  size_t max_cached_file = 256 << 10; // larger files are kept open instead
  size_t max_open_files = 256;        // descriptors the cache holds
  double revalidate_after = 1.0;      // seconds between checks of an entry against the disk
};

// Which version of a file: what a stat tells apart (a rewrite in place, or a rename over it).
struct FileVersion {
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t size = 0;
  timespec mtime{};
  bool operator==(const FileVersion& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

class StaticFiles {
public:
  // serve()'s answer when the request goes on to the route's upstream (try_files "@upstream").
  static constexpr int kPassOn = 0;
  static constexpr size_t kMaxCachedKey = 1024;

  explicit StaticFiles(StaticOptions options);
  explicit StaticFiles(std::string root) : StaticFiles(with_root(std::move(root))) {}
  ~StaticFiles();
  StaticFiles(const StaticFiles&) = delete;
  StaticFiles& operator=(const StaticFiles&) = delete;

  bool ok() const { return root_fd_ >= 0; }
  const StaticOptions& options() const { return opt_; }
  // Answers the request for path (as sent, percent-encoded, relative to the root) through sink;
  // returns the status answered, or kPassOn having sent nothing.
  int serve(FileSink& sink, std::string_view path);
  // A short text/plain answer for status (405 with Allow).
  int respond_error(FileSink& sink, int status);
  // Entries and descriptors held, for tests.
  size_t cached_entries() const { return index_.size(); }
  size_t open_files() const { return open_files_; }

private:
  static StaticOptions with_root(std::string root) {
    StaticOptions o;
    o.root = std::move(root);
    return o;
  }
  // What a candidate path may be: the path as asked (a directory redirects to its slash, then
  // its index), a file only ("$uri"), or a directory's index only ("$uri/").
  enum class Want : uint8_t { ANY, FILE, DIRECTORY };
  static constexpr int kMissing = -1; // nothing at this candidate, nothing sent

  // An open regular file (or directory, on the way to its index) inside the root.
  struct Target {
    int fd = -1;
    bool directory = false;
    FileVersion version;
  };

  struct CacheEntry {
    std::string key;     // the request path as sent (a variant's: + '\n' + coding)
    std::string rel;     // the file beneath the root, as opened (for revalidation and siblings)
    std::string content; // a small file's bytes
    int fd = -1;         // or a larger one's descriptor
    FileMeta meta;
    FileVersion version;
    double checked_at = 0; // ev_now() of the last check
    uint8_t siblings = 0;  // bit per coding: a fresh precompressed sibling exists
  };
  using Lru = std::list<CacheEntry>;

  int serve_path(FileSink& sink, std::string_view raw, Want want);
  // A fresh (or revalidated) entry for key, or null (then erased).
  CacheEntry* cached(std::string_view key, double now);
  int serve_entry(FileSink& sink, CacheEntry& e);
  // One version's response: its body from memory, or from fd (owned: closed or handed to the
  // sink; else the cache's, duplicated for the sink).
  int send_version(FileSink& sink, const FileMeta& m, std::string_view content, int fd, bool owned,
                   bool vary);
  // Opens rel (beneath the root, leading '/' allowed, NUL-terminated) by the symlink policy:
  // a regular file or a directory. Returns 0 or the status to answer with.
  int open_path(const char* rel, Target& out);
  int open_beneath(const char* relative, Target& out);
  int open_at_root(const char* relative, bool follow);
  // Keeps t (its content, or its descriptor) under key; null when it cannot (then t.fd is
  // still the caller's).
  CacheEntry* keep(std::string_view key, std::string_view rel, Target& t, std::string_view type,
                   std::string_view coding, double now);
  uint8_t find_siblings(const CacheEntry& e);
  // Opens e's sibling for coding (rel: a PATH_MAX buffer for its path beneath the root): true,
  // with t open, when it is a regular file at least as new as e's.
  bool open_sibling(const CacheEntry& e, compression::Encoding coding, char* rel, Target& t);
  CacheEntry* variant(const CacheEntry& e, compression::Encoding coding, double now);
  void erase(Lru::iterator it);
  void add_cache_headers(http::ResponseHead& head, double now);
  int respond_text(FileSink& sink, int status, std::string_view body, std::string_view name = {},
                   std::string_view value = {});

  // Budget accounting: the bytes held plus a guess at the list node, map node and strings.
  static constexpr size_t kEntryOverhead = 256;
  static size_t cost(const CacheEntry& e) {
    return e.key.size() + e.rel.size() + e.content.size() + kEntryOverhead;
  }

  StaticOptions opt_;
  std::string root_; // canonical, no trailing slash (except for "/" itself)
  int root_fd_ = -1; // O_PATH, the anchor of every open
  bool have_openat2_ = true;
  size_t longest_index_ = 0; // of opt_.index: room kept for it after a decoded path
  std::string max_age_;      // "max-age=N" for expires without cache_control
  time_t expires_for_ = 0;
  char expires_text_[29];
  Lru lru_;                                                   // most recently used first
  std::unordered_map<std::string_view, Lru::iterator> index_; // keys view CacheEntry::key
  size_t cached_bytes_ = 0;
  size_t open_files_ = 0;
};

} // namespace portico::server
