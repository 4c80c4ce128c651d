#include "metrics/access_log.h"

#include "core/json_escape.h"

#include <charconv>
#include <cstdio>
#include <ctime>
#include <unistd.h>

namespace portico::metrics {

namespace {

constexpr size_t kFlushAt = 64 * 1024;

// The request line and headers come from the client: escaped so that one request is always
// one line.
using core::append_json_escaped;

void append_number(std::string& out, uint64_t v) {
  char buf[24];
  out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
}

void append_seconds(std::string& out, double s) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, s, std::chars_format::fixed, 6);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

// "29/Nov/2026:20:55:01 +0000" (text) or "2026-11-29T20:55:01Z" (JSON), formatted once a second.
std::string_view now_text(bool iso) {
  thread_local time_t cached_at[2] = {0, 0};
  thread_local char cached[2][32];
  thread_local size_t len[2];
  time_t now = time(nullptr);
  if (cached_at[iso] != now) {
    tm g;
    gmtime_r(&now, &g);
    len[iso] = strftime(cached[iso], sizeof cached[iso],
                        iso ? "%Y-%m-%dT%H:%M:%SZ" : "%d/%b/%Y:%H:%M:%S +0000", &g);
    cached_at[iso] = now;
  }
  return {cached[iso], len[iso]};
}

} // namespace

AccessLog::AccessLog(struct ev_loop* loop, int fd, bool json) : loop_(loop), fd_(fd), json_(json) {
  buf_.reserve(kFlushAt + 4096);
  ev_timer_init(&timer_, timer_cb, 1.0, 1.0);
  timer_.data = this;
  ev_timer_start(loop_, &timer_);
  ev_unref(loop_); // the log alone does not keep a worker running
}

AccessLog::~AccessLog() {
  flush();
  ev_ref(loop_);
  ev_timer_stop(loop_, &timer_);
}

void AccessLog::timer_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<AccessLog*>(w->data)->flush();
}

void AccessLog::flush() {
  size_t done = 0;
  while (done < buf_.size()) {
    ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (n <= 0)
      break; // a full disk loses log lines, never requests
    done += static_cast<size_t>(n);
  }
  buf_.clear();
}

void AccessLog::record(const AccessLogEntry& e) {
  if (json_)
    append_json(e);
  else
    append_text(e);
  if (buf_.size() >= kFlushAt)
    flush();
}

void AccessLog::append_text(const AccessLogEntry& e) {
  auto& b = buf_;
  b.append(e.client);
  b.append(" - - [");
  b.append(now_text(false));
  b.append("] \"");
  append_json_escaped(b, e.method);
  b.push_back(' ');
  append_json_escaped(b, e.target);
  b.append(e.protocol == "h1" ? " HTTP/1.1\" " : " HTTP/2\" ");
  append_number(b, static_cast<uint64_t>(e.status));
  b.push_back(' ');
  append_number(b, e.bytes_out);
  b.append(" in=");
  append_number(b, e.bytes_in);
  b.append(" proto=");
  b.append(e.protocol);
  b.append(" host=\"");
  append_json_escaped(b, e.authority);
  b.append("\" queue=");
  append_seconds(b, e.queue);
  b.append(" connect=");
  append_seconds(b, e.connect);
  b.append(" ttfb=");
  append_seconds(b, e.first_byte);
  b.append(" total=");
  append_seconds(b, e.total);
  b.append(" upstream=");
  b.append(e.upstream.empty() ? std::string_view("-") : e.upstream);
  b.append(" retries=");
  append_number(b, static_cast<uint64_t>(e.retries));
  b.push_back('\n');
}

void AccessLog::append_json(const AccessLogEntry& e) {
  auto& b = buf_;
  auto str = [&](const char* key, std::string_view v) {
    b.append(key);
    b.push_back('"');
    append_json_escaped(b, v);
    b.push_back('"');
  };
  str("{\"time\":", now_text(true));
  str(",\"client\":", e.client);
  str(",\"protocol\":", e.protocol);
  str(",\"method\":", e.method);
  str(",\"authority\":", e.authority);
  str(",\"path\":", e.target);
  b.append(",\"status\":");
  append_number(b, static_cast<uint64_t>(e.status));
  b.append(",\"bytes_in\":");
  append_number(b, e.bytes_in);
  b.append(",\"bytes_out\":");
  append_number(b, e.bytes_out);
  b.append(",\"queue\":");
  append_seconds(b, e.queue);
  b.append(",\"connect\":");
  append_seconds(b, e.connect);
  b.append(",\"ttfb\":");
  append_seconds(b, e.first_byte);
  b.append(",\"total\":");
  append_seconds(b, e.total);
  str(",\"upstream\":", e.upstream);
  b.append(",\"retries\":");
  append_number(b, static_cast<uint64_t>(e.retries));
  b.append("}\n");
}

} // namespace portico::metrics
