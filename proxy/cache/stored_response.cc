#include "cache/stored_response.h"

#include "upstream/request_writer.h"

#include <algorithm>
#include <atomic>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

namespace portico::cache {

namespace {

// Memory files held by stored bodies, in the whole process, and how many they may be: a
// quarter of the descriptor limit, so that a large cache never leaves a connection without
// one. Counted on stores and frees only, never on a hit.
std::atomic<int64_t> g_files{0};

int64_t file_limit() {
  static const int64_t limit = [] {
    rlimit r{};
    if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
      return int64_t{1024};
    return static_cast<int64_t>(r.rlim_cur / 4);
  }();
  return limit;
}

// Fields the body depends on: a 304 never changes them (RFC 9111 3.2).
bool body_field(std::string_view n) {
  return n == "content-encoding" || n == "content-length" || n == "content-md5" ||
         n == "content-range" || n == "etag";
}

bool listed(std::string_view list, std::string_view name) {
  bool found = false;
  for_each_listed(list, [&](std::string_view item) { found |= http::iequals(item, name); });
  return found;
}

} // namespace

void set_stored_fields(StoredResponse& r, std::span<const http::Header> fields) {
  size_t size = 0;
  for (const auto& f : fields)
    size += f.name.size() + f.value.size();
  r.text.clear();
  r.text.reserve(size);
  std::vector<std::pair<size_t, size_t>> at;
  at.reserve(fields.size());
  for (const auto& f : fields) {
    at.emplace_back(r.text.size(), f.name.size());
    r.text.append(f.name);
    r.text.append(f.value);
  }
  r.fields.clear();
  r.fields.reserve(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string_view name(r.text.data() + at[i].first, at[i].second);
    std::string_view value(r.text.data() + at[i].first + at[i].second, fields[i].value.size());
    r.fields.push_back({name, value});
    if (name == "etag")
      r.etag = value;
    else if (name == "last-modified")
      r.last_modified = value;
  }
}

void StoredBody::append(std::string_view data) {
  bytes.append(data);
  tell();
}

StoredBody::~StoredBody() {
  if (map_base_)
    ::munmap(map_base_, map_len_);
  if (fd_ >= 0) {
    ::close(fd_);
    g_files.fetch_sub(1, std::memory_order_relaxed);
  }
}

void StoredBody::finish(bool ok) {
  complete = ok;
  failed = !ok;
  if (ok && bytes.size() >= kFileAtLeast)
    move_to_file();
  tell();
}

bool StoredBody::hold_file() {
  if (g_files.fetch_add(1, std::memory_order_relaxed) < file_limit())
    return true;
  g_files.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

void StoredBody::move_to_file() {
  // Without a memory file (over the limit, none left, no memory) the body stays in the string.
  if (!hold_file())
    return;
  int fd = ::memfd_create("portico-cache", MFD_CLOEXEC);
  if (fd < 0) {
    g_files.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      ::close(fd);
      g_files.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    done += static_cast<size_t>(n);
  }
  void* map = ::mmap(nullptr, bytes.size(), PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    ::close(fd);
    g_files.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  fd_ = fd;
  map_base_ = map;
  map_len_ = bytes.size();
  map_ = static_cast<const char*>(map);
  size_ = bytes.size();
  std::string().swap(bytes);
}

bool StoredBody::adopt_file(int fd, int64_t offset, size_t size) {
  complete = true;
  if (size == 0) {
    ::close(fd);
    return true;
  }
  size_t len = static_cast<size_t>(offset) + size;
  void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    ::close(fd);
    return false;
  }
  map_base_ = map;
  map_len_ = len;
  map_ = static_cast<const char*>(map) + offset;
  size_ = size;
  if (hold_file()) {
    fd_ = fd;
    offset_ = offset;
  } else {
    ::close(fd); // the mapping stays good without it; hits go out of it, not by sendfile
  }
  return true;
}

void StoredBody::unwatch(BodyWatcher* w) {
  std::erase(watchers, w);
}

void StoredBody::tell() {
  // A watcher may stop watching (its exchange ended) while it is told.
  auto now = watchers;
  for (BodyWatcher* w : now)
    if (std::find(watchers.begin(), watchers.end(), w) != watchers.end())
      w->on_body_grew();
}

size_t StoredResponse::cost() const {
  size_t n = sizeof(StoredResponse) + text.capacity() + fields.capacity() * sizeof(http::Header) +
             date.capacity() + vary_key.capacity();
  for (const auto& v : vary_names)
    n += sizeof(v) + v.capacity();
  if (body)
    n += sizeof(StoredBody) + std::max(body->bytes.capacity(), body->size());
  return n;
}

bool unstorable_field(std::string_view n) {
  return upstream::is_hop_by_hop(n) || n == "proxy-authenticate" ||
         n == "proxy-authentication-info" || n == "proxy-authorization" || n == "age" ||
         n == "date" || n == "content-length";
}

std::shared_ptr<StoredResponse> make_stored(int status, std::span<const http::Header> fields,
                                            const CacheControl& cc, std::string_view date) {
  auto r = std::make_shared<StoredResponse>();
  r->status = status;
  r->date = date;
  thread_local std::vector<http::Header> kept;
  kept.clear();
  for (const auto& f : fields) {
    if (unstorable_field(f.name))
      continue;
    if (!cc.no_cache_fields.empty() && listed(cc.no_cache_fields, f.name))
      continue;
    if (!cc.private_fields.empty() && listed(cc.private_fields, f.name))
      continue;
    kept.push_back(f);
  }
  set_stored_fields(*r, kept);
  return r;
}

std::shared_ptr<StoredResponse> copy_head(const StoredResponse& r) {
  auto out = std::make_shared<StoredResponse>();
  out->status = r.status;
  out->date = r.date;
  out->fresh = r.fresh;
  out->auth_ok = r.auth_ok;
  out->vary_names = r.vary_names;
  out->vary_key = r.vary_key;
  out->length = r.length;
  set_stored_fields(*out, r.fields);
  out->body = std::make_shared<StoredBody>();
  if (r.length > 0)
    out->body->bytes.reserve(static_cast<size_t>(r.length));
  return out;
}

std::shared_ptr<StoredResponse>
updated_by(const StoredResponse& old, std::span<const http::Header> fields, std::string_view date) {
  auto r = std::make_shared<StoredResponse>();
  r->status = old.status;
  r->date = date.empty() ? old.date : std::string(date);
  r->auth_ok = old.auth_ok;
  r->vary_names = old.vary_names;
  r->vary_key = old.vary_key;
  r->length = old.length;
  r->body = old.body;
  auto replaced = [&](std::string_view name) {
    if (body_field(name) || unstorable_field(name))
      return false;
    for (const auto& f : fields)
      if (f.name == name)
        return true;
    return false;
  };
  thread_local std::vector<http::Header> merged;
  merged.clear();
  for (const auto& f : old.fields)
    if (!replaced(f.name))
      merged.push_back(f);
  for (const auto& f : fields)
    if (!body_field(f.name) && !unstorable_field(f.name))
      merged.push_back(f);
  set_stored_fields(*r, merged);
  return r;
}

} // namespace portico::cache
