#pragma once
// The access log of one listener in one worker: a line per request (a template of fields,
// config/log_format.h, or JSON lines) appended to a buffer owned by the worker, written to the
// file with one write(2) when the buffer passes 64 KiB or once a second, never per request.
// Off (no object at all) unless the listener names a file.
#include "config/config.h"
#include "http/header.h"

#include <cstdint>
#include <ev.h>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace portico::metrics {

struct AccessLogEntry {
  std::string_view client;
  std::string_view protocol; // h1, h2c, h2
  std::string_view method;
  std::string_view authority;
  std::string_view target;              // as the client sent it
  std::string_view upstream_target;     // as it went upstream (a prefix_rewrite's)
  std::string_view route;               // its label (config::RouteConfig::label), "none"
  std::span<const http::Header> fields; // the request's, for user agent, referer, $http_NAME
  int status = 0;                       // 0: the client went away before an answer
  uint64_t bytes_in = 0;                // request body
  uint64_t bytes_out = 0;               // response body sent to the client (a local reply's too)
  double queue = 0, connect = 0, first_byte = 0, total = 0; // seconds
  std::string_view upstream;                                // endpoint, empty when none was reached
  int retries = 0;
  std::string_view cache_status; // the cache's Cache-Status value, empty when none
  std::string_view limit;        // the limit that refused or delayed it ("api 429"), or empty
};

class AccessLog {
public:
  // fd: opened O_APPEND by the main thread and shared by the workers (each write is whole
  // lines, so workers' lines never interleave within a line).
  // listener: its access_log_format.
  AccessLog(struct ev_loop* loop, int fd, const config::ListenerConfig& listener);
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  void record(const AccessLogEntry& e);
  void flush();

private:
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void append_line(const AccessLogEntry& e);
  void append_field(const AccessLogEntry& e, const config::LogPiece& p);
  void append_json(const AccessLogEntry& e);

  struct ev_loop* loop_;
  int fd_;
  bool json_;
  std::vector<config::LogPiece> line_;
  std::string buf_;
  ev_timer timer_;
};

} // namespace portico::metrics
