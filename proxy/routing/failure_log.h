#pragma once
// The error log's line for a request the proxy failed (a 502, 503 or 504 for its upstream, a
// deadline, a response cut): what happened and where, and the request it happened to, as
// nginx's "client: ..., server: ..., request: ..., upstream: ..." says. Rate-limited per
// cluster (core/error_log.h), so a dead cluster's flood hides no other's.
#include "server/exchange.h"

#include <string_view>

namespace portico::routing {

// status: what the client was answered, 0 when its response was cut; endpoint: the one last
// tried, empty when none was.
void log_request_failure(const server::Exchange& ex, std::string_view cluster,
                         std::string_view endpoint, int status, const char* what);
// The same for a response read on for a filter after its client went (a cache storing it),
// whose request is gone with the client: what cut it short.
void log_kept_failure(std::string_view cluster, std::string_view endpoint, const char* what);

} // namespace portico::routing
