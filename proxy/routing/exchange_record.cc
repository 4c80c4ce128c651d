#include "routing/exchange_record.h"

#include <ev.h>

namespace portico::routing {

metrics::Protocol protocol_of(const server::Exchange& ex) {
  if (ex.request().version == http::Version::HTTP_3)
    return metrics::Protocol::H3;
  if (ex.request().version != http::Version::HTTP_2)
    return metrics::Protocol::H1;
  return ex.over_tls() ? metrics::Protocol::H2 : metrics::Protocol::H2C;
}

ExchangeRecord::ExchangeRecord(const server::Exchange& ex, const Route& r, metrics::AccessLog* log)
    : route(*r.metrics), label(r.label), log(log), target_sent(ex.request().target),
      started_at(ev_time()) {}

void ExchangeRecord::close(const server::Exchange& ex, std::string_view upstream, int retries,
                           std::string_view cache_status, std::string_view limit) {
  if (status == 0 && ex.response_status() != 0)
    // The session answered behind the route's back: a body refused midway (413).
    answered(ex.response_status(), metrics::AnsweredBy::PROXY);
  route.requests.inc(ex.listener_index(), protocol_of(ex), status ? status : 499,
                     status ? answered_by : metrics::AnsweredBy::NONE);
  double now = ev_time();
  route.duration.observe(now - started_at);
  if (!log)
    return;
  const auto& req = ex.request();
  metrics::AccessLogEntry e;
  e.client = ex.client_address();
  e.protocol = metrics::to_string(protocol_of(ex));
  e.method = req.method;
  e.authority = req.authority;
  e.target = target_sent;
  e.upstream_target = req.target;
  e.route = label;
  e.fields = req.headers;
  e.status = status;
  e.bytes_in = bytes_in;
  e.bytes_out = ex.body_bytes_sent();
  e.queue = queue;
  e.connect = connect;
  e.first_byte = first_byte;
  e.total = now - started_at;
  e.upstream = upstream;
  e.retries = retries;
  e.cache_status = cache_status;
  e.limit = limit;
  log->record(e);
}

} // namespace portico::routing
