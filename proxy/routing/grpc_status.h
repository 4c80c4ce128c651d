#pragma once
// gRPC through the proxy: a gRPC client reads a call's outcome from grpc-status, never from the
// HTTP status, so an error the proxy answers itself (no route, no upstream, a timeout) goes
// out as a trailers-only response (HTTP 200, HEADERS ending the stream) whose grpc-status says
// what the HTTP status would have, as Envoy's local replies do; and a call's grpc-timeout is
// its deadline here too. The filter that does both is filters/grpc.cc.
#include "server/exchange.h"

#include <optional>
#include <string>
#include <string_view>

namespace portico::routing::grpc {

// content-type application/grpc, or application/grpc+proto and the like.
bool is_grpc(const http::RequestHead& req);
// The gRPC status code for an error the proxy answers with http_status: UNAVAILABLE (14) for
// 502, 503 and 429, DEADLINE_EXCEEDED (4) for 504, UNIMPLEMENTED (12) for 404 and 501,
// RESOURCE_EXHAUSTED (8) for 413 and 431, INTERNAL (13) for 400, UNKNOWN (2) otherwise.
int status_for(int http_status);
// message as a grpc-message value: percent-encoded UTF-8, appended to out.
void append_message(std::string& out, std::string_view message);
// grpc-timeout ("100m", "5S": at most 8 digits and a unit of H, M, S, m, u, n) in seconds;
// nullopt when absent or malformed (then there is no deadline, as gRPC servers read it).
std::optional<double> timeout_of(const http::RequestHead& req);

} // namespace portico::routing::grpc
