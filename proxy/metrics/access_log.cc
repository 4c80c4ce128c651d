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

// The first field of that name (lower case), or "".
std::string_view field(const AccessLogEntry& e, std::string_view name) {
  for (const auto& h : e.fields)
    if (h.name == name)
      return h.value;
  return {};
}

} // namespace

AccessLog::AccessLog(struct ev_loop* loop, int fd, const config::ListenerConfig& listener)
    : loop_(loop), fd_(fd), json_(listener.access_log_format == config::AccessLogFormat::JSON),
      line_(listener.access_log_line) {
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
    append_line(e);
  if (buf_.size() >= kFlushAt)
    flush();
}

void AccessLog::append_line(const AccessLogEntry& e) {
  for (const auto& p : line_) {
    buf_.append(p.literal);
    if (p.field != config::LogField::NONE)
      append_field(e, p);
  }
  buf_.push_back('\n');
}

void AccessLog::append_field(const AccessLogEntry& e, const config::LogPiece& p) {
  using config::LogField;
  auto& b = buf_;
  // Strings from the client escaped (a request is one line); an empty one is "-", as nginx's.
  auto str = [&](std::string_view v) {
    if (v.empty())
      b.push_back('-');
    else
      append_json_escaped(b, v);
  };
  switch (p.field) {
  case LogField::NONE: break;
  case LogField::TIME: b.append(now_text(false)); break;
  case LogField::TIME_ISO: b.append(now_text(true)); break;
  case LogField::CLIENT: str(e.client); break;
  case LogField::PROTOCOL: b.append(e.protocol); break;
  case LogField::METHOD: str(e.method); break;
  case LogField::HOST: str(e.authority); break;
  case LogField::PATH: str(e.target); break;
  case LogField::UPSTREAM_PATH: str(e.upstream_target); break;
  case LogField::REQUEST:
    append_json_escaped(b, e.method);
    b.push_back(' ');
    append_json_escaped(b, e.target);
    b.append(e.protocol == "h1" ? " HTTP/1.1" : " HTTP/2");
    break;
  case LogField::STATUS: append_number(b, static_cast<uint64_t>(e.status)); break;
  case LogField::BYTES_IN: append_number(b, e.bytes_in); break;
  case LogField::BYTES_OUT: append_number(b, e.bytes_out); break;
  case LogField::QUEUE: append_seconds(b, e.queue); break;
  case LogField::CONNECT: append_seconds(b, e.connect); break;
  case LogField::TTFB: append_seconds(b, e.first_byte); break;
  case LogField::TOTAL: append_seconds(b, e.total); break;
  case LogField::UPSTREAM: str(e.upstream); break;
  case LogField::RETRIES: append_number(b, static_cast<uint64_t>(e.retries)); break;
  case LogField::ROUTE: str(e.route); break;
  case LogField::USER_AGENT: str(field(e, "user-agent")); break;
  case LogField::REFERER: str(field(e, "referer")); break;
  case LogField::CACHE_STATUS: str(e.cache_status); break;
  case LogField::LIMIT: str(e.limit); break;
  case LogField::REQUEST_FIELD: str(field(e, p.field_name)); break;
  }
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
  str(",\"upstream_path\":", e.upstream_target);
  str(",\"route\":", e.route);
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
  str(",\"user_agent\":", field(e, "user-agent"));
  str(",\"referer\":", field(e, "referer"));
  if (!e.cache_status.empty())
    str(",\"cache_status\":", e.cache_status);
  if (!e.limit.empty())
    str(",\"limit\":", e.limit);
  b.append("}\n");
}

} // namespace portico::metrics
