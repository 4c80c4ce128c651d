#include "server/static_files.h"

#include "compression/accept_encoding.h"
#include "core/http_date.h"
#include "http/response_head.h"
#include "server/content_types.h"
#include "server/static_path.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>

namespace portico::server {

namespace {

std::string_view error_body(int status) {
  switch (status) {
  case 400: return "bad request\n";
  case 403: return "forbidden\n";
  case 404: return "not found\n";
  case 405: return "method not allowed\n";
  case 500: return "internal server error\n";
  case 503: return "service unavailable\n";
  default: return http::reason_phrase(status); // a try_files "=CODE"
  }
}

int status_for_errno(int e) {
  switch (e) {
  case EACCES:
  case EPERM: return 403;
  case EMFILE:
  case ENFILE:
  case ENOMEM: return 503;
  case ENOENT:
  case ENOTDIR:
  case ENAMETOOLONG:
  case ELOOP:  // a symlink where none may be, or one that appeared after realpath()
  case EXDEV:  // openat2 refused to leave the root
  case EAGAIN: // openat2 saw a rename race twice
    return 404;
  default: return 500;
  }
}

constexpr std::string_view kSiblingExt[compression::kEncodingCount] = {".gz", ".br", ".zst"};

FileVersion version_of(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size, st.st_mtim};
}

bool newer_or_same(timespec a, timespec b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec >= b.tv_nsec);
}

} // namespace

StaticFiles::StaticFiles(StaticOptions options) : opt_(std::move(options)) {
  char buf[PATH_MAX];
  // A root this long would leave no room in serve_path()'s path buffer.
  if (!::realpath(opt_.root.c_str(), buf) || std::strlen(buf) > PATH_MAX / 2)
    return;
  root_fd_ = ::open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd_ >= 0)
    root_ = buf;
  if (opt_.expires >= 0 && opt_.cache_control.empty())
    max_age_ = "max-age=" + std::to_string(opt_.expires);
  for (const auto& name : opt_.index)
    longest_index_ = std::max(longest_index_, name.size());
}

StaticFiles::~StaticFiles() {
  while (!lru_.empty())
    erase(std::prev(lru_.end()));
  if (root_fd_ >= 0)
    ::close(root_fd_);
}

int StaticFiles::serve(FileSink& sink, std::string_view path) {
  const auto& req = sink.request();
  bool pass_on = !opt_.try_files.empty() && opt_.try_files.back() == "@upstream";
  if (req.method != "GET" && req.method != "HEAD")
    return pass_on ? kPassOn : respond_error(sink, 405);
  if (!path.starts_with('/')) {
    // absolute-form ("GET http://host/x HTTP/1.1"): the path is what follows the authority
    size_t scheme = path.find("://");
    if (scheme == std::string_view::npos)
      return respond_error(sink, 400);
    size_t slash = path.find('/', scheme + 3);
    path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
  }
  if (opt_.try_files.empty()) {
    int status = serve_path(sink, path, Want::ANY);
    return status == kMissing ? respond_error(sink, 404) : status;
  }
  char candidate[kMaxCachedKey + 2];
  for (size_t i = 0; i < opt_.try_files.size(); ++i) {
    std::string_view t = opt_.try_files[i];
    bool last = i + 1 == opt_.try_files.size();
    if (last && t.starts_with('='))
      return respond_error(sink, std::atoi(t.data() + 1));
    if (last && t == "@upstream")
      return kPassOn;
    // "$uri" stands for the path as sent, wherever it appears ("$uri.html", "$uri/").
    size_t n = 0;
    for (size_t at = 0; at < t.size();) {
      bool var = t.substr(at).starts_with("$uri");
      std::string_view piece = var ? path : t.substr(at, 1);
      if (n + piece.size() > kMaxCachedKey)
        return respond_error(sink, 404);
      std::memcpy(candidate + n, piece.data(), piece.size());
      n += piece.size();
      at += var ? 4 : 1;
    }
    std::string_view name(candidate, n);
    Want want = name.ends_with('/') ? Want::DIRECTORY : Want::FILE;
    int status = serve_path(sink, name, last ? Want::ANY : want);
    if (status != kMissing)
      return status;
  }
  return respond_error(sink, 404);
}

int StaticFiles::serve_path(FileSink& sink, std::string_view raw, Want want) {
  if (want == Want::FILE && raw.ends_with('/'))
    return kMissing;
  double now = ev_now(sink.loop());
  if (CacheEntry* e = cached(raw, now))
    return serve_entry(sink, *e);
  // The decoded path, with room for the longest index name and a sibling's extension.
  char rel[PATH_MAX];
  size_t len = 0;
  if (int status = decode_path(raw, rel, sizeof rel - longest_index_ - 8, &len))
    return status == 404 ? kMissing : respond_error(sink, status);
  std::string_view decoded(rel, len);
  if (has_dot_dot_segment(decoded))
    return respond_error(sink, 403);
  if (!opt_.dotfiles && has_dot_file(decoded))
    return respond_error(sink, 404); // refused, not fallen back from: it exists or it does not
  rel[len] = '\0';
  Target t;
  if (int status = open_path(rel, t))
    return status == 404 ? kMissing : respond_error(sink, status);
  if (t.directory) {
    ::close(t.fd);
    if (want == Want::FILE)
      return kMissing;
    if (want == Want::ANY && !decoded.ends_with('/')) {
      // Relative links in the index resolve against the directory only with the slash.
      std::string_view query = sink.request().query();
      size_t n = raw.size() + 1 + (query.empty() ? 0 : query.size() + 1);
      char* loc = sink.arena().allocate(n);
      char* p = std::copy(raw.begin(), raw.end(), loc);
      *p++ = '/';
      if (!query.empty()) {
        *p++ = '?';
        std::copy(query.begin(), query.end(), p);
      }
      return respond_text(sink, 301, "moved permanently\n", "location", {loc, n});
    }
    bool found = false;
    for (const auto& name : opt_.index) {
      std::memcpy(rel + len, name.data(), name.size());
      rel[len + name.size()] = '\0';
      int status = open_path(rel, t);
      if (status == 0 && !t.directory) {
        len += name.size();
        found = true;
        break;
      }
      if (status == 0)
        ::close(t.fd);
      else if (status != 404)
        return respond_error(sink, status);
    }
    if (!found)
      return kMissing; // no listings
  }
  decoded = {rel, len};
  // By the name asked for, as nginx does: a symlink "a.css" -> "blob" is still CSS.
  std::string_view type = content_type_for(decoded);
  if (CacheEntry* e = keep(raw, decoded, t, type, {}, now))
    return serve_entry(sink, *e);
  FileMeta m;
  format_meta(m, type, t.version.size, t.version.mtime);
  return send_version(sink, m, {}, t.fd, true, false);
}

StaticFiles::CacheEntry* StaticFiles::cached(std::string_view key, double now) {
  auto it = index_.find(key);
  if (it == index_.end())
    return nullptr;
  CacheEntry& e = *it->second;
  if (now < e.checked_at || now - e.checked_at >= opt_.revalidate_after) {
    Target t;
    if (open_path(e.rel.c_str(), t) != 0) {
      erase(it->second);
      return nullptr;
    }
    ::close(t.fd);
    if (t.directory || !(t.version == e.version)) {
      erase(it->second);
      return nullptr;
    }
    e.checked_at = now;
    if (!opt_.precompressed.empty() && e.meta.content_encoding.empty())
      e.siblings = find_siblings(e);
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return &e;
}

int StaticFiles::serve_entry(FileSink& sink, CacheEntry& e) {
  if (e.siblings) {
    compression::Encoding offered[compression::kEncodingCount];
    size_t n = 0;
    for (auto c : opt_.precompressed)
      if (e.siblings & (1u << static_cast<unsigned>(c)))
        offered[n++] = c;
    if (auto coding = compression::negotiate(sink.request().headers, {offered, n}))
      if (CacheEntry* v = variant(e, *coding, ev_now(sink.loop())))
        return send_version(sink, v->meta, v->content, v->fd, false, true);
  }
  return send_version(sink, e.meta, e.content, e.fd, false, e.siblings != 0);
}

int StaticFiles::send_version(FileSink& sink, const FileMeta& m, std::string_view content, int fd,
                              bool owned, bool vary) {
  http::ResponseHead head;
  char content_range[kContentRangeMax];
  BodyPlan plan = plan_file_response(sink.request(), m, head, content_range);
  int body_fd = -1;
  if (plan.length > 0 && content.empty() && fd >= 0) {
    // A cached descriptor stays the cache's: the sink gets its own (the same open file).
    body_fd = owned ? std::exchange(fd, -1) : ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (body_fd < 0)
      return respond_error(sink, status_for_errno(errno));
  }
  if (owned && fd >= 0)
    ::close(fd);
  if (vary)
    head.add("vary", "accept-encoding");
  if (plan.status != 416)
    add_cache_headers(head, ev_now(sink.loop()));
  sink.send_head(head);
  if (body_fd >= 0) {
    sink.send_file(body_fd, plan.offset, plan.length);
    return plan.status;
  }
  if (plan.length > 0)
    sink.send_body(
        content.substr(static_cast<size_t>(plan.offset), static_cast<size_t>(plan.length)));
  sink.end_response();
  return plan.status;
}

int StaticFiles::open_path(const char* rel, Target& out) {
  while (*rel == '/')
    ++rel;
  if (*rel == '\0')
    rel = ".";
  if (opt_.symlinks != StaticOptions::Symlinks::WITHIN_ROOT)
    return open_beneath(rel, out);
  // realpath() shows where symlinks lead; only a place beneath the root is opened.
  char fs[PATH_MAX];
  size_t root_len = root_ == "/" ? 0 : root_.size();
  size_t n = std::strlen(rel);
  if (root_len + 1 + n >= sizeof fs)
    return 404;
  std::memcpy(fs, root_.data(), root_len);
  fs[root_len] = '/';
  std::memcpy(fs + root_len + 1, rel, n + 1);
  char real[PATH_MAX];
  if (!::realpath(fs, real))
    return status_for_errno(errno);
  std::string_view r(real);
  const char* relative;
  if (r == root_)
    relative = ".";
  else if (root_ == "/")
    relative = real + 1;
  else if (r.size() > root_.size() && r.starts_with(root_) && r[root_.size()] == '/')
    relative = real + root_.size() + 1;
  else
    return 404; // a symlink out of the root: as if it were not there
  return open_beneath(relative, out);
}

int StaticFiles::open_beneath(const char* relative, Target& out) {
  int fd = open_at_root(relative, opt_.symlinks == StaticOptions::Symlinks::ANYWHERE);
  if (fd < 0)
    return status_for_errno(errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return status_for_errno(e);
  }
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    ::close(fd); // devices, fifos and sockets are not content
    return 404;
  }
  out.fd = fd;
  out.directory = S_ISDIR(st.st_mode);
  out.version = version_of(st);
  return 0;
}

int StaticFiles::open_at_root(const char* relative, bool follow) {
  // O_NONBLOCK: opening a fifo must not wait for a writer.
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  if (follow) // the path has no ".." (serve_path): only a symlink's target leaves the root
    return ::openat(root_fd_, relative, kFlags);
  // Without symlinks the kernel itself keeps the open beneath the root, even against a rename
  // racing with realpath().
  if (have_openat2_) {
    open_how how{};
    how.flags = kFlags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int fd = static_cast<int>(::syscall(SYS_openat2, root_fd_, relative, &how, sizeof how));
    if (fd < 0 && errno == EAGAIN) // a rename elsewhere on the system: the kernel asks to retry
      fd = static_cast<int>(::syscall(SYS_openat2, root_fd_, relative, &how, sizeof how));
    if (fd >= 0 || errno != ENOSYS)
      return fd;
    have_openat2_ = false; // a kernel before 5.6, or a seccomp filter that hides the call
  }
  return ::openat(root_fd_, relative, kFlags | O_NOFOLLOW);
}

StaticFiles::CacheEntry* StaticFiles::keep(std::string_view key, std::string_view rel, Target& t,
                                           std::string_view type, std::string_view coding,
                                           double now) {
  if (key.size() > kMaxCachedKey + 8)
    return nullptr;
  bool in_memory = t.version.size <= static_cast<int64_t>(opt_.max_cached_file);
  if (!in_memory && open_files_ >= opt_.max_open_files)
    return nullptr;
  std::string content;
  if (in_memory) {
    content.resize(static_cast<size_t>(t.version.size));
    size_t got = 0;
    while (got < content.size()) {
      ssize_t n =
          ::pread(t.fd, content.data() + got, content.size() - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return nullptr; // shrank while we read: served uncached, which finds out
      got += static_cast<size_t>(n);
    }
    struct stat st;
    if (::fstat(t.fd, &st) != 0 || !(version_of(st) == t.version))
      return nullptr; // written while we read: do not keep a torn copy
  }
  if (auto old = index_.find(key); old != index_.end())
    erase(old->second);
  size_t need = key.size() + rel.size() + content.size() + kEntryOverhead;
  if (need > opt_.cache_bytes || opt_.cache_entries == 0)
    return nullptr; // it would empty the cache and still not fit
  while (!lru_.empty() &&
         (cached_bytes_ + need > opt_.cache_bytes || index_.size() >= opt_.cache_entries))
    erase(std::prev(lru_.end()));
  lru_.emplace_front();
  CacheEntry& e = lru_.front();
  e.key = key;
  e.rel = rel;
  e.content = std::move(content);
  if (in_memory) {
    ::close(t.fd);
  } else {
    e.fd = t.fd;
    ++open_files_;
  }
  t.fd = -1;
  format_meta(e.meta, type, t.version.size, t.version.mtime);
  e.meta.content_encoding = coding;
  e.version = t.version;
  e.checked_at = now;
  if (!opt_.precompressed.empty() && coding.empty())
    e.siblings = find_siblings(e);
  index_.emplace(e.key, lru_.begin());
  cached_bytes_ += cost(e);
  return &e;
}

uint8_t StaticFiles::find_siblings(const CacheEntry& e) {
  uint8_t mask = 0;
  char rel[PATH_MAX];
  for (auto c : opt_.precompressed) {
    Target t;
    if (open_sibling(e, c, rel, t)) {
      ::close(t.fd);
      mask |= static_cast<uint8_t>(1u << static_cast<unsigned>(c));
    }
  }
  return mask;
}

bool StaticFiles::open_sibling(const CacheEntry& e, compression::Encoding coding, char* rel,
                               Target& t) {
  std::string_view ext = kSiblingExt[static_cast<size_t>(coding)];
  if (e.rel.size() + ext.size() >= PATH_MAX)
    return false;
  std::memcpy(rel, e.rel.data(), e.rel.size());
  std::memcpy(rel + e.rel.size(), ext.data(), ext.size());
  rel[e.rel.size() + ext.size()] = '\0';
  if (open_path(rel, t) != 0)
    return false;
  if (!t.directory && newer_or_same(t.version.mtime, e.version.mtime))
    return true;
  ::close(t.fd);
  t.fd = -1;
  return false;
}

StaticFiles::CacheEntry* StaticFiles::variant(const CacheEntry& e, compression::Encoding coding,
                                              double now) {
  std::string_view token = compression::token(coding);
  char key[kMaxCachedKey + 16];
  if (e.key.size() + 1 + token.size() > sizeof key)
    return nullptr;
  std::memcpy(key, e.key.data(), e.key.size());
  key[e.key.size()] = '\n'; // no request path holds one
  std::memcpy(key + e.key.size() + 1, token.data(), token.size());
  std::string_view k(key, e.key.size() + 1 + token.size());
  if (CacheEntry* v = cached(k, now))
    return v;
  char rel[PATH_MAX];
  Target t;
  if (!open_sibling(e, coding, rel, t))
    return nullptr;
  // keep() may evict e itself to make room: nothing of e is read after this point.
  CacheEntry* v = keep(k, rel, t, e.meta.content_type, token, now);
  if (t.fd >= 0)
    ::close(t.fd);
  return v;
}

void StaticFiles::erase(Lru::iterator it) {
  cached_bytes_ -= cost(*it);
  if (it->fd >= 0) {
    ::close(it->fd);
    --open_files_;
  }
  index_.erase(it->key);
  lru_.erase(it);
}

void StaticFiles::add_cache_headers(http::ResponseHead& head, double now) {
  if (!opt_.cache_control.empty())
    head.add("cache-control", opt_.cache_control);
  else if (!max_age_.empty())
    head.add("cache-control", max_age_);
  if (opt_.expires >= 0) {
    time_t at = static_cast<time_t>(now) + static_cast<time_t>(opt_.expires);
    if (at != expires_for_) {
      core::format_http_date(at, expires_text_);
      expires_for_ = at;
    }
    head.add("expires", {expires_text_, sizeof expires_text_});
  }
}

int StaticFiles::respond_text(FileSink& sink, int status, std::string_view body,
                              std::string_view name, std::string_view value) {
  http::ResponseHead head;
  head.status = status;
  head.content_length = static_cast<int64_t>(body.size());
  if (!name.empty())
    head.add(name, value);
  head.add("content-type", "text/plain");
  sink.send_head(head);
  sink.send_body(body);
  sink.end_response();
  return status;
}

int StaticFiles::respond_error(FileSink& sink, int status) {
  return respond_text(sink, status, error_body(status), status == 405 ? "allow" : "", "GET, HEAD");
}

} // namespace portico::server
