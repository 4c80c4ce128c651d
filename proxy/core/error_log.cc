#include "core/error_log.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sys/time.h>
#include <unistd.h>

namespace portico::core::log {

namespace {

std::atomic<int> g_min{static_cast<int>(Level::INFO)};
std::atomic<int> g_fd{2};
std::atomic<bool> g_journal{false};
thread_local const char* t_name = "main";

// Per kind and subject: the second of the last line said, and the events held back since.
// A subject claims a slot by its hash (0: free) and probes a few more when another holds it;
// past kSlots subjects failing at once, some share a slot (and a limit).
struct Limiter {
  std::atomic<uint64_t> subject{0};
  std::atomic<long> second{-1};
  std::atomic<unsigned long> held{0};
};
constexpr size_t kSlots = 64, kProbes = 8;
Limiter g_limits[static_cast<int>(Kind::COUNT)][kSlots];

uint64_t hash_of(std::string_view s) {
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h | 1; // never 0, the free slot's
}

Limiter& limiter(Kind k, std::string_view subject) {
  Limiter* slots = g_limits[static_cast<int>(k)];
  uint64_t h = hash_of(subject);
  for (size_t i = 0; i < kProbes; ++i) {
    Limiter& l = slots[(h + i) % kSlots];
    // A free slot is claimed (0 stays in owner when the claim succeeds); a failed claim
    // leaves in owner who took it, the same subject from another thread being as good.
    uint64_t owner = l.subject.load(std::memory_order_relaxed);
    if (owner == 0)
      l.subject.compare_exchange_strong(owner, h, std::memory_order_relaxed);
    if (owner == 0 || owner == h)
      return l;
  }
  return slots[h % kSlots];
}

int priority(Level l) {
  switch (l) {
  case Level::DEBUG: return 7;
  case Level::INFO: return 6;
  case Level::WARN: return 4;
  case Level::ERROR: return 3;
  }
  return 6;
}

} // namespace

const char* to_string(Level l) {
  switch (l) {
  case Level::DEBUG: return "debug";
  case Level::INFO: return "info";
  case Level::WARN: return "warn";
  case Level::ERROR: return "error";
  }
  return "?";
}

bool parse_level(const char* text, Level* out) {
  for (Level l : {Level::DEBUG, Level::INFO, Level::WARN, Level::ERROR})
    if (std::strcmp(text, to_string(l)) == 0) {
      *out = l;
      return true;
    }
  return false;
}

void configure(Level min, int fd, bool journal) {
  g_min.store(static_cast<int>(min), std::memory_order_relaxed);
  g_fd.store(fd, std::memory_order_relaxed);
  g_journal.store(journal, std::memory_order_relaxed);
}

void set_thread_name(const char* name) {
  t_name = name;
}

int fd() {
  return g_fd.load(std::memory_order_relaxed);
}

bool enabled(Level l) {
  return static_cast<int>(l) >= g_min.load(std::memory_order_relaxed);
}

namespace {

void write_line(Level l, Kind k, std::string_view subject, const char* fmt, va_list ap) {
  if (!enabled(l))
    return;
  timeval tv{};
  ::gettimeofday(&tv, nullptr);
  unsigned long held = 0;
  if (k != Kind::GENERAL) {
    Limiter& lim = limiter(k, subject);
    long sec = static_cast<long>(tv.tv_sec);
    if (lim.second.exchange(sec, std::memory_order_relaxed) == sec) {
      lim.held.fetch_add(1, std::memory_order_relaxed);
      return; // said already this second
    }
    held = lim.held.exchange(0, std::memory_order_relaxed);
  }
  char line[2048];
  size_t n = 0;
  if (g_journal.load(std::memory_order_relaxed))
    n += static_cast<size_t>(std::snprintf(line, sizeof line, "<%d>", priority(l)));
  tm utc{};
  ::gmtime_r(&tv.tv_sec, &utc);
  n += std::strftime(line + n, sizeof line - n, "%Y-%m-%dT%H:%M:%S", &utc);
  n += static_cast<size_t>(std::snprintf(line + n, sizeof line - n,
                                         ".%03dZ [%s] %s: ", static_cast<int>(tv.tv_usec / 1000),
                                         to_string(l), t_name));
  int m = std::vsnprintf(line + n, sizeof line - n, fmt, ap);
  n = m < 0 ? n : std::min(sizeof line - 2, n + static_cast<size_t>(m));
  if (held > 0)
    n += static_cast<size_t>(
        std::snprintf(line + n, sizeof line - n - 1, " (%lu more like it held back)", held));
  n = std::min(n, sizeof line - 2);
  line[n++] = '\n';
  // One write: lines from several threads never interleave (O_APPEND files and pipes alike).
  [[maybe_unused]] ssize_t w = ::write(g_fd.load(std::memory_order_relaxed), line, n);
}

} // namespace

void write(Level l, Kind k, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  write_line(l, k, {}, fmt, ap);
  va_end(ap);
}

void write_about(Level l, Kind k, std::string_view subject, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  write_line(l, k, subject, fmt, ap);
  va_end(ap);
}

} // namespace portico::core::log
