#include "cache/disk_store.h"

#include "cache/stored_file.h"
#include "core/error_log.h"
#include "metrics/worker_metrics.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <openssl/evp.h>
#include <random>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

namespace portico::cache {

namespace {

// The store of each directory, for the other workers and the next configuration load to find.
// Taken when a worker starts a router, never on a request.
struct Registry {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<DiskStore>> stores;
};

Registry& registry() {
  static Registry r;
  return r;
}

constexpr size_t kReadBackBatch = 64; // files read back per taking of the lock

// A file's name: the first 64 bits of SHA-256 over the key and the selecting fields. Two
// responses that share one lose a file to each other, which their heads tell apart.
uint64_t name_of(std::string_view key, std::string_view vary_key) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, key.data(), key.size());
  EVP_DigestUpdate(ctx, "", 1);
  EVP_DigestUpdate(ctx, vary_key.data(), vary_key.size());
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v = (v << 8) | md[i];
  return v;
}

// What a file takes on disk: whole blocks, as nginx counts its cache.
uint64_t blocks(uint64_t size) {
  return (size + 4095) & ~uint64_t{4095};
}

bool read_all(int fd, char* to, size_t n, off_t at) {
  while (n > 0) {
    ssize_t got = ::pread(fd, to, n, at);
    if (got <= 0)
      return false;
    to += got;
    n -= static_cast<size_t>(got);
    at += got;
  }
  return true;
}

// fd's head: its key and response (no body), and where the body lies. False when the file is
// not a whole stored response.
bool read_head(int fd, std::string& key, StoredResponse& r, uint64_t& body_at,
               uint64_t& body_size) {
  struct stat st {};
  char prefix[kFilePrefix];
  uint64_t head_size = 0;
  if (::fstat(fd, &st) != 0 || !read_all(fd, prefix, sizeof prefix, 0) ||
      !decode_file_prefix({prefix, sizeof prefix}, head_size, body_size) ||
      static_cast<uint64_t>(st.st_size) != kFilePrefix + head_size + body_size)
    return false;
  thread_local std::string head;
  head.resize(head_size);
  thread_local std::vector<http::Header> fields;
  if (!read_all(fd, head.data(), head.size(), kFilePrefix) ||
      !decode_file_head(head, key, r, fields))
    return false;
  set_stored_fields(r, fields);
  body_at = kFilePrefix + head_size;
  r.length = static_cast<int64_t>(body_size);
  return true;
}

bool write_all(int fd, std::string_view head, std::string_view body) {
  iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                  {const_cast<char*>(body.data()), body.size()}};
  int first = 0;
  while (first < 2) {
    ssize_t n = ::writev(fd, iov + first, 2 - first);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    auto left = static_cast<size_t>(n);
    while (first < 2 && left >= iov[first].iov_len)
      left -= iov[first++].iov_len;
    if (first < 2) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return true;
}

bool parse_name(const char* s, uint64_t& name) {
  size_t n = std::strlen(s);
  auto [end, ec] = std::from_chars(s, s + n, name, 16);
  return n == 16 && ec == std::errc() && end == s + n;
}

} // namespace

std::shared_ptr<DiskStore> DiskStore::open(const std::string& dir, size_t capacity,
                                           size_t max_variants) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  auto& entry = reg.stores[dir];
  if (auto s = entry.lock()) {
    std::lock_guard store_lock(s->mu_);
    s->index_.resize(capacity);
    s->report();
    return s;
  }
  auto s = std::make_shared<DiskStore>(dir, capacity, max_variants);
  entry = s;
  return s;
}

DiskStore::DiskStore(std::string dir, size_t capacity, size_t max_variants)
    : path_(std::move(dir)), max_variants_(std::max<size_t>(1, max_variants)),
      index_(capacity, [this](const std::string&, Entry& e) {
        for (const auto& f : e.files)
          unlink_file(f.name);
        objects_ -= e.files.size();
      }) {
  std::random_device random;
  tag_ = std::to_string((uint64_t{random()} << 32) | random());
  reader_ = std::thread([this] { read_back(); });
}

DiskStore::~DiskStore() {
  stop_.store(true, std::memory_order_relaxed);
  reader_.join();
  std::lock_guard lock(mu_);
  auto& levels = metrics::disk_cache_levels();
  levels.objects.fetch_sub(reported_objects_, std::memory_order_relaxed);
  levels.bytes.fetch_sub(reported_bytes_, std::memory_order_relaxed);
}

std::string DiskStore::file_path(uint64_t name) const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(name));
  return path_ + "/" + std::string(hex, 2) + "/" + hex;
}

void DiskStore::unlink_file(uint64_t name) {
  ::unlink(file_path(name).c_str());
}

size_t DiskStore::objects() const {
  std::lock_guard lock(mu_);
  return objects_;
}

size_t DiskStore::used_bytes() const {
  std::lock_guard lock(mu_);
  return index_.used_bytes();
}

DiskStore::Entry DiskStore::take(const std::string& key) {
  Entry out;
  if (Entry* e = index_.peek(key)) {
    out = std::move(*e);
    objects_ -= out.files.size();
    index_.erase(key);
  }
  return out;
}

void DiskStore::put_back(const std::string& key, Entry e) {
  while (e.files.size() > max_variants_) {
    unlink_file(e.files.back().name);
    e.files.pop_back();
  }
  size_t c = 0;
  for (const auto& f : e.files)
    c += blocks(f.size);
  if (e.files.empty())
    return;
  if (c > index_.capacity()) { // larger than the whole store: nothing of it stays
    for (const auto& f : e.files)
      unlink_file(f.name);
    return;
  }
  size_t n = e.files.size();
  index_.insert(key, std::move(e), c);
  objects_ += n;
}

std::vector<std::shared_ptr<StoredResponse>> DiskStore::load(std::string_view key) {
  std::vector<std::shared_ptr<StoredResponse>> out;
  std::vector<File> files;
  {
    std::lock_guard lock(mu_);
    Entry* e = index_.find(key);
    if (!e)
      return out;
    files = e->files;
  }
  // Files gone (deleted from outside the store), and files that did not read: by the inode
  // read, so that one another worker has replaced since is not taken for them.
  std::vector<std::pair<uint64_t, ino_t>> damaged;
  for (const auto& f : files) {
    int fd = ::open(file_path(f.name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT)
        damaged.push_back({f.name, 0});
      continue;
    }
    auto r = std::make_shared<StoredResponse>();
    std::string file_key;
    uint64_t at = 0, size = 0;
    if (!read_head(fd, file_key, *r, at, size) || file_key != key) {
      struct stat st {};
      ::fstat(fd, &st);
      ::close(fd);
      damaged.push_back({f.name, st.st_ino}); // cut short, or another key's since
      continue;
    }
    r->body = std::make_shared<StoredBody>();
    if (r->body->adopt_file(fd, static_cast<int64_t>(at), size)) // fd is the body's now
      out.push_back(std::move(r));
  }
  if (!damaged.empty()) {
    std::lock_guard lock(mu_);
    std::string k(key);
    Entry kept = take(k);
    std::erase_if(kept.files, [&](const File& f) {
      auto it = std::find_if(damaged.begin(), damaged.end(),
                             [&](const auto& d) { return d.first == f.name; });
      if (it == damaged.end())
        return false;
      struct stat st {};
      bool there = ::stat(file_path(f.name).c_str(), &st) == 0;
      if (there && st.st_ino != it->second)
        return false; // replaced since it was read: the new one stays
      if (there)
        unlink_file(f.name);
      return true;
    });
    put_back(k, std::move(kept));
    report();
  }
  return out;
}

void DiskStore::save(std::string_view key, const StoredResponse& r) {
  if (!r.body || !r.body->complete)
    return;
  std::string_view body = r.body->data();
  thread_local std::string head;
  encode_file_head(key, r, body.size(), head);
  uint64_t size = head.size() + body.size();
  {
    std::lock_guard lock(mu_);
    if (blocks(size) > index_.capacity())
      return;
  }
  uint64_t name = name_of(key, r.vary_key);
  std::string final_path = file_path(name);
  std::string temporary = path_ + "/tmp." + tag_ + "." +
                          std::to_string(temporaries_.fetch_add(1, std::memory_order_relaxed));
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && write_all(fd, head, body);
  int err = errno;
  if (fd >= 0 && ::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  // The rename and the index change together: an eviction or a purge of the key by another
  // worker comes wholly before (and the new file stays) or wholly after (and it goes).
  std::lock_guard lock(mu_);
  if (ok && ::rename(temporary.c_str(), final_path.c_str()) != 0) {
    // The first file of its two hex digits: their directory is made on demand.
    std::string subdir = final_path.substr(0, final_path.rfind('/'));
    ok = (::mkdir(subdir.c_str(), 0700) == 0 || errno == EEXIST) &&
         ::rename(temporary.c_str(), final_path.c_str()) == 0;
    err = errno;
  }
  if (!ok) {
    ::unlink(temporary.c_str());
    core::log::write_about(core::log::Level::WARN, core::log::Kind::CACHE_DISK, path_,
                           "cache directory %s: cannot write a response: %s", path_.c_str(),
                           std::strerror(err));
    return;
  }
  std::string k(key);
  Entry e = take(k);
  // The file of the same name was replaced by the rename: it is not deleted.
  std::erase_if(e.files, [&](const File& f) { return f.name == name; });
  e.files.insert(e.files.begin(), File{name, size});
  put_back(k, std::move(e));
  report();
}

bool DiskStore::erase(std::string_view key) {
  std::lock_guard lock(mu_);
  std::string k(key);
  if (loading())
    erased_keys_.insert(k);
  Entry e = take(k);
  for (const auto& f : e.files)
    unlink_file(f.name);
  report();
  return !e.files.empty();
}

size_t DiskStore::erase_prefix(std::string_view prefix) {
  std::lock_guard lock(mu_);
  if (loading())
    erased_prefixes_.emplace_back(prefix);
  std::vector<std::string> keys;
  index_.for_each_key([&](const std::string& k) {
    if (k.starts_with(prefix))
      keys.push_back(k);
  });
  for (const auto& k : keys) {
    Entry e = take(k);
    for (const auto& f : e.files)
      unlink_file(f.name);
  }
  report();
  return keys.size();
}

bool DiskStore::erased_while_reading(const std::string& key) const {
  if (erased_keys_.contains(key))
    return true;
  for (const auto& p : erased_prefixes_)
    if (key.starts_with(p))
      return true;
  return false;
}

void DiskStore::read_back() {
  // Temporaries a crash left, and the files of each of the 256 subdirectories.
  std::vector<std::string> dirs = {path_};
  for (int i = 0; i < 256; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", i);
    dirs.push_back(path_ + "/" + hex);
  }
  for (const auto& dir : dirs) {
    DIR* d = ::opendir(dir.c_str());
    if (!d)
      continue;
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      if (stop_.load(std::memory_order_relaxed))
        break;
      names.emplace_back(e->d_name);
      if (names.size() == kReadBackBatch) {
        for (const auto& n : names)
          read_back_one(dir, n.c_str());
        names.clear();
      }
    }
    ::closedir(d);
    for (const auto& n : names)
      read_back_one(dir, n.c_str());
    if (stop_.load(std::memory_order_relaxed))
      return;
  }
  size_t objects = 0, bytes = 0;
  {
    std::lock_guard lock(mu_);
    loading_.store(false, std::memory_order_release);
    erased_keys_.clear();
    erased_prefixes_.clear();
    objects = objects_;
    bytes = index_.used_bytes();
  }
  core::log::write(core::log::Level::INFO, core::log::Kind::GENERAL,
                   "cache directory %s: %zu responses (%zu bytes) read back", path_.c_str(),
                   objects, bytes);
}

void DiskStore::read_back_one(const std::string& dir, const char* entry) {
  if (std::strncmp(entry, "tmp.", 4) == 0 && dir == path_) { // a write cut short
    // Only one this store did not start: a write under way here is not a crash's.
    if (std::string_view(entry).substr(4).starts_with(tag_ + "."))
      return;
    ::unlink((dir + "/" + entry).c_str());
    return;
  }
  uint64_t name = 0;
  if (dir == path_ || !parse_name(entry, name) || file_path(name) != dir + "/" + entry)
    return; // not the store's: left alone
  int fd = ::open(file_path(name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  StoredResponse r;
  std::string key;
  uint64_t at = 0, size = 0;
  bool ok = read_head(fd, key, r, at, size) && name_of(key, r.vary_key) == name;
  ::close(fd);
  std::lock_guard lock(mu_);
  if (!ok) { // damaged, or of another version: it can never be served
    unlink_file(name);
    return;
  }
  if (Entry* e = index_.peek(key))
    for (const auto& f : e->files)
      if (f.name == name)
        return; // written since the store opened
  if (erased_while_reading(key)) {
    unlink_file(name);
    return;
  }
  Entry e = take(key);
  e.files.push_back(File{name, at + size}); // older than any written since it opened
  put_back(key, std::move(e));
  report();
}

void DiskStore::report() {
  auto objects = static_cast<int64_t>(objects_);
  auto bytes = static_cast<int64_t>(index_.used_bytes());
  auto& levels = metrics::disk_cache_levels();
  levels.objects.fetch_add(objects - reported_objects_, std::memory_order_relaxed);
  levels.bytes.fetch_add(bytes - reported_bytes_, std::memory_order_relaxed);
  reported_objects_ = objects;
  reported_bytes_ = bytes;
}

} // namespace portico::cache
