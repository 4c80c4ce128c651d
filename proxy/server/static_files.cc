#include "server/static_files.h"

#include "core/deferred_queue.h"
#include "core/http_date.h"
#include "server/conditional_request.h"
#include "server/content_types.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/openat2.h>
#include <optional>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace portico::server {

namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr std::string_view kIndex = "index.html";

// pread lands here before send_body copies it out; one per thread is enough because a chunk
// never outlives the call that read it.
thread_local char chunk_buffer[kChunk];

std::string_view error_body(int status) {
  switch (status) {
  case 400: return "bad request\n";
  case 403: return "forbidden\n";
  case 404: return "not found\n";
  case 405: return "method not allowed\n";
  case 503: return "service unavailable\n";
  default: return "internal server error\n";
  }
}

// A short text/plain answer, with one more header when asked (Allow, Location). Returns status.
int respond_text(Exchange& ex, int status, std::string_view body, std::string_view name = {},
                 std::string_view value = {}) {
  http::ResponseHead head;
  head.status = status;
  head.content_length = static_cast<int64_t>(body.size());
  if (!name.empty())
    head.add(name, value);
  head.add("content-type", "text/plain");
  ex.send_head(head);
  if (!ex.request().is_head())
    ex.send_body(body);
  ex.end_response();
  return status;
}

int respond_error(Exchange& ex, int status) {
  return respond_text(ex, status, error_body(status), status == 405 ? "allow" : "", "GET, HEAD");
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
  case ELOOP:  // a symlink appeared between realpath() and open
  case EXDEV:  // openat2 refused to leave the root
  case EAGAIN: // openat2 saw a rename race twice
    return 404;
  default: return 500;
  }
}

// Percent-decodes a request path into out. Returns 0, 400 for a bad escape or a NUL (which
// would cut the path short at the syscall), or 404 when it does not fit in cap.
int decode_path(std::string_view in, char* out, size_t cap, size_t* len) {
  size_t n = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      unsigned byte = 0;
      const char* hex = in.data() + i + 1;
      if (i + 2 >= in.size() || std::from_chars(hex, hex + 2, byte, 16).ptr != hex + 2)
        return 400;
      c = static_cast<char>(byte);
      i += 2;
    }
    if (c == '\0')
      return 400;
    if (n >= cap)
      return 404; // ENAMETOOLONG, as nginx answers it
    out[n++] = c;
  }
  *len = n;
  return 0;
}

// Checked on the decoded path, so "%2e%2e" and "..%2f" are caught as well as a plain "..".
bool has_dot_dot_segment(std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos)
      end = path.size();
    if (path.substr(start, end - start) == "..")
      return true;
    start = end + 1;
  }
  return false;
}

void format_meta(StaticFiles::FileMeta& m, std::string_view type, int64_t size, timespec mtime) {
  m.content_type = type;
  m.size = size;
  m.mtime = mtime.tv_sec;
  // Nanoseconds, so that a rewrite within the same second with the same size still changes it.
  uint64_t ns =
      static_cast<uint64_t>(mtime.tv_sec) * 1000000000u + static_cast<uint64_t>(mtime.tv_nsec);
  char* p = m.etag;
  char* end = m.etag + sizeof m.etag;
  *p++ = '"';
  p = std::to_chars(p, end, ns, 16).ptr;
  *p++ = '-';
  p = std::to_chars(p, end, static_cast<uint64_t>(size), 16).ptr;
  *p++ = '"';
  m.etag_len = static_cast<size_t>(p - m.etag);
  core::format_http_date(mtime.tv_sec, m.last_modified);
}

// An HTTP date from a conditional header; what clients echo back is recognised without a parse
// (which allocates).
std::optional<time_t> date_of(std::string_view v, const StaticFiles::FileMeta& m) {
  return v == m.last_modified_view() ? m.mtime : core::parse_http_date(v);
}

// If-Range holds when its validator still names this version: an ETag by strong comparison, or
// exactly the Last-Modified date.
bool if_range_holds(std::string_view v, const StaticFiles::FileMeta& m) {
  if (v.starts_with('"') || v.starts_with("W/"))
    return v == m.etag_view();
  auto t = date_of(v, m);
  return t && *t == m.mtime;
}

struct BodyPlan {
  int64_t offset = 0;
  int64_t length = 0; // 0: the head was all (HEAD, 304, 416, empty file)
  int status = 200;   // of the head sent
};

// Answers the conditional and range headers for one version of a file and sends the head.
// Everything it builds lives on this stack frame: the sessions copy header values in send_head.
BodyPlan send_file_head(Exchange& ex, const StaticFiles::FileMeta& m) {
  const auto& req = ex.request();
  bool inm_present = false, inm_match = false;
  const http::Header* ims = nullptr;
  const http::Header* range = nullptr;
  const http::Header* if_range = nullptr;
  for (const auto& h : req.headers) {
    if (h.name.size() < 5 || (h.name[0] != 'i' && h.name[0] != 'r'))
      continue;
    if (h.name == "if-none-match") {
      inm_present = true; // a list may arrive split over several fields
      inm_match = inm_match || etag_list_matches(h.value, m.etag_view());
    } else if (h.name == "if-modified-since") {
      if (!ims)
        ims = &h;
    } else if (h.name == "range") {
      range = &h;
    } else if (h.name == "if-range") {
      if_range = &h;
    }
  }
  http::ResponseHead head;
  // If-Modified-Since counts only without If-None-Match (RFC 9110 13.2.2).
  std::optional<time_t> since = !inm_present && ims ? date_of(ims->value, m) : std::nullopt;
  if (inm_present ? inm_match : (since && m.mtime <= *since)) {
    head.status = 304;
    head.add("etag", m.etag_view());
    head.add("last-modified", m.last_modified_view());
    ex.send_head(head);
    return {0, 0, 304};
  }
  int64_t first = 0, last = m.size - 1;
  char content_range[kContentRangeMax];
  if (range && req.method == "GET" && (!if_range || if_range_holds(if_range->value, m))) {
    RangeKind kind = parse_range(range->value, m.size, &first, &last);
    if (kind == RangeKind::UNSATISFIABLE) {
      head.status = 416;
      head.content_length = 0;
      head.add("content-range", format_content_range(content_range, -1, -1, m.size));
      ex.send_head(head);
      return {0, 0, 416};
    }
    if (kind == RangeKind::PARTIAL) {
      head.status = 206;
      head.add("content-range", format_content_range(content_range, first, last, m.size));
    } else {
      first = 0;
      last = m.size - 1;
    }
  }
  head.content_length = last - first + 1;
  head.add("content-type", m.content_type);
  head.add("etag", m.etag_view());
  head.add("last-modified", m.last_modified_view());
  head.add("accept-ranges", "bytes");
  ex.send_head(head);
  if (req.is_head())
    return {0, 0, head.status};
  return {first, head.content_length, head.status};
}

// A file too large for the cache, read as the client takes it: up to the high watermark now,
// the rest from on_response_writable. Owns the file descriptor and itself.
class FileStream final : public core::Disposable, public ExchangeListener {
public:
  static void start(Exchange& ex, int fd, int64_t offset, int64_t length) {
    auto* s = new FileStream(fd, offset, length);
    ex.set_listener(s);
    s->produce(ex); // may close the exchange
  }
  ~FileStream() override { ::close(fd_); }

  void on_response_writable(Exchange& ex) override { produce(ex); }
  void on_exchange_close(Exchange& ex) override {
    core::DeferredQueue::of(ex.loop())->dispose(this);
  }

private:
  FileStream(int fd, int64_t offset, int64_t length) : fd_(fd), offset_(offset), left_(length) {}

  void produce(Exchange& ex) {
    if (done_)
      return; // HTTP/2 keeps the listener until the stream closes
    while (left_ > 0 && !ex.above_high_watermark()) {
      size_t want = static_cast<size_t>(std::min<int64_t>(left_, kChunk));
      ssize_t n = ::pread(fd_, chunk_buffer, want, offset_);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        // Truncated under us or an I/O error: the promised length cannot be kept, and only
        // an abort tells the client.
        done_ = true;
        ex.abort(); // may close the exchange
        return;
      }
      ex.send_body({chunk_buffer, static_cast<size_t>(n)});
      offset_ += n;
      left_ -= n;
    }
    if (left_ == 0) {
      done_ = true;
      ex.end_response(); // may close the exchange
    }
  }

  int fd_;
  int64_t offset_;
  int64_t left_;
  bool done_ = false;
};

} // namespace

StaticFiles::StaticFiles(std::string root) {
  char buf[PATH_MAX];
  // A root this long would leave no room in resolve()'s path buffer.
  if (!::realpath(root.c_str(), buf) || std::strlen(buf) > PATH_MAX / 2)
    return;
  root_fd_ = ::open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd_ >= 0)
    root_ = buf;
}

StaticFiles::~StaticFiles() {
  if (root_fd_ >= 0)
    ::close(root_fd_);
}

int StaticFiles::serve(Exchange& ex) {
  const auto& req = ex.request();
  if (req.method != "GET" && req.method != "HEAD")
    return respond_error(ex, 405);
  std::string_view key = req.path();
  double now = ev_now(ex.loop());
  auto it = index_.find(key);
  if (it != index_.end()) {
    CacheEntry& e = *it->second;
    if (now >= e.checked_at && now - e.checked_at < kRevalidateAfter) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return serve_cached(ex, e);
    }
  }
  Target t;
  if (int status = resolve(ex, key, t)) {
    if (it != index_.end())
      erase(it->second);
    return status;
  }
  if (it != index_.end()) {
    CacheEntry& e = *it->second;
    if (e.dev == t.dev && e.ino == t.ino && e.meta.size == t.size &&
        e.mtime.tv_sec == t.mtime.tv_sec && e.mtime.tv_nsec == t.mtime.tv_nsec) {
      ::close(t.fd);
      e.checked_at = now;
      lru_.splice(lru_.begin(), lru_, it->second);
      return serve_cached(ex, e);
    }
    erase(it->second);
  }
  if (t.size <= static_cast<int64_t>(kMaxCachedFile)) {
    if (CacheEntry* e = load(key, t, now)) {
      ::close(t.fd);
      return serve_cached(ex, *e);
    }
  }
  FileMeta m;
  format_meta(m, t.content_type, t.size, t.mtime);
  BodyPlan plan = send_file_head(ex, m);
  if (plan.length == 0) {
    ::close(t.fd);
    ex.end_response();
    return plan.status;
  }
  FileStream::start(ex, t.fd, plan.offset, plan.length);
  return plan.status;
}

int StaticFiles::serve_cached(Exchange& ex, CacheEntry& e) {
  BodyPlan plan = send_file_head(ex, e.meta);
  if (plan.length > 0)
    ex.send_body(std::string_view(e.content).substr(static_cast<size_t>(plan.offset),
                                                    static_cast<size_t>(plan.length)));
  ex.end_response();
  return plan.status;
}

int StaticFiles::resolve(Exchange& ex, std::string_view raw_path, Target& out) {
  std::string_view path = raw_path;
  if (!path.starts_with('/')) {
    // absolute-form ("GET http://host/x HTTP/1.1"): the path is what follows the authority
    size_t scheme = path.find("://");
    if (scheme == std::string_view::npos)
      return respond_error(ex, 400);
    size_t slash = path.find('/', scheme + 3);
    path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
  }
  // root + decoded path + room for "index.html" and the NUL
  char fs[PATH_MAX];
  size_t root_len = root_ == "/" ? 0 : root_.size();
  std::memcpy(fs, root_.data(), root_len);
  size_t len = 0;
  if (int status = decode_path(path, fs + root_len, sizeof fs - root_len - kIndex.size() - 1, &len))
    return respond_error(ex, status);
  std::string_view decoded(fs + root_len, len);
  if (has_dot_dot_segment(decoded))
    return respond_error(ex, 403);
  size_t end = root_len + len;
  fs[end] = '\0';
  if (int status = open_beneath(fs, out))
    return respond_error(ex, status);
  if (out.directory) {
    ::close(out.fd);
    if (!decoded.ends_with('/')) {
      // Relative links in the index resolve against the directory only with the slash.
      std::string_view query = ex.request().query();
      size_t n = raw_path.size() + 1 + (query.empty() ? 0 : query.size() + 1);
      char* loc = ex.arena().allocate(n);
      char* p = std::copy(raw_path.begin(), raw_path.end(), loc);
      *p++ = '/';
      if (!query.empty()) {
        *p++ = '?';
        std::copy(query.begin(), query.end(), p);
      }
      return respond_text(ex, 301, "moved permanently\n", "location", {loc, n});
    }
    std::memcpy(fs + end, kIndex.data(), kIndex.size());
    end += kIndex.size();
    fs[end] = '\0';
    int status = open_beneath(fs, out);
    if (status == 0 && out.directory) {
      ::close(out.fd);
      status = 404;
    }
    if (status)
      return respond_error(ex, status);
  }
  // By the name asked for, as nginx does: a symlink "a.css" -> "blob" is still CSS.
  out.content_type = content_type_for({fs + root_len, end - root_len});
  return 0;
}

int StaticFiles::open_beneath(const char* fs_path, Target& out) {
  char real[PATH_MAX];
  if (!::realpath(fs_path, real))
    return status_for_errno(errno);
  std::string_view r(real);
  const char* relative;
  if (r == root_) {
    relative = ".";
  } else if (root_ == "/") {
    relative = real + 1;
  } else if (r.size() > root_.size() && r.starts_with(root_) && r[root_.size()] == '/') {
    relative = real + root_.size() + 1;
  } else {
    return 404; // a symlink out of the root: as if it were not there
  }
  int fd = open_at_root(relative);
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
  out.dev = st.st_dev;
  out.ino = st.st_ino;
  out.size = st.st_size;
  out.mtime = st.st_mtim;
  return 0;
}

int StaticFiles::open_at_root(const char* relative) {
  // O_NONBLOCK: opening a fifo must not wait for a writer. realpath() has already checked the
  // place; openat2 makes the open itself unable to leave the root, even if a symlink or rename
  // raced with the check.
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
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

StaticFiles::CacheEntry* StaticFiles::load(std::string_view key, const Target& t, double now) {
  if (key.size() > kMaxCachedKey)
    return nullptr;
  std::string content(static_cast<size_t>(t.size), '\0');
  size_t got = 0;
  while (got < content.size()) {
    ssize_t n = ::pread(t.fd, content.data() + got, content.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return nullptr; // shrank while we read: let the streaming path find out
    got += static_cast<size_t>(n);
  }
  struct stat st;
  if (::fstat(t.fd, &st) != 0 || st.st_size != t.size || st.st_mtim.tv_sec != t.mtime.tv_sec ||
      st.st_mtim.tv_nsec != t.mtime.tv_nsec)
    return nullptr; // written while we read: do not keep a torn copy
  size_t need = key.size() + content.size() + kEntryOverhead;
  while (!lru_.empty() &&
         (cached_bytes_ + need > kCacheBudget || index_.size() >= kMaxCacheEntries))
    erase(std::prev(lru_.end()));
  lru_.emplace_front();
  CacheEntry& e = lru_.front();
  e.key = key;
  e.content = std::move(content);
  format_meta(e.meta, t.content_type, t.size, t.mtime);
  e.dev = t.dev;
  e.ino = t.ino;
  e.mtime = t.mtime;
  e.checked_at = now;
  index_.emplace(e.key, lru_.begin());
  cached_bytes_ += cost(e);
  return &e;
}

void StaticFiles::erase(Lru::iterator it) {
  cached_bytes_ -= cost(*it);
  index_.erase(it->key);
  lru_.erase(it);
}

} // namespace portico::server
