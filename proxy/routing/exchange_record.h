#pragma once
// What is known of one exchange for its accounting, written once when it closes, for every
// exchange the router saw (proxied, redirected, answered directly, rejected): its count in
// portico_requests_total, its duration, and its access-log line.
#include "metrics/access_log.h"
#include "metrics/worker_metrics.h"
#include "routing/route.h"
#include "server/exchange.h"

#include <cstdint>
#include <string_view>

namespace portico::routing {

struct ExchangeRecord {
  // Made before any filter runs: the target is the client's, whatever a rewrite makes of it.
  ExchangeRecord(const server::Exchange& ex, const Route& route, metrics::AccessLog* log);

  // What the client was answered and by whom (the upstream's status as it came, a local
  // reply's as it was made: a gRPC error counts as the 502 it maps).
  void answered(int status, metrics::AnsweredBy by) {
    this->status = status;
    answered_by = by;
  }
  void add_request_bytes(size_t n) {
    route.bytes_received.inc(n);
    bytes_in += n;
  }
  void add_response_bytes(size_t n) { route.bytes_sent.inc(n); }
  // The exchange closed: counted (a client gone before any answer as 499, nginx's "client
  // closed request"; an answer the session gave itself, as the proxy's) and logged.
  // upstream: the endpoint last tried, or empty; cache_status and limit: what the filters said
  // (ExchangeOptions), for $cache_status and $limit.
  void close(const server::Exchange& ex, std::string_view upstream, int retries,
             std::string_view cache_status = {}, std::string_view limit = {});

  metrics::RouteMetrics& route;
  std::string_view label;
  metrics::AccessLog* log;      // null: this listener logs nothing
  std::string_view target_sent; // the client's request target
  double started_at;            // ev_time(): the request head is complete
  int status = 0;               // 0 before an answer
  metrics::AnsweredBy answered_by = metrics::AnsweredBy::NONE;
  // Phase times of the last attempt (seconds), and the body sizes, for the access log.
  double queue = 0, connect = 0, first_byte = 0;
  uint64_t bytes_in = 0;
};

metrics::Protocol protocol_of(const server::Exchange& ex);

} // namespace portico::routing
