#pragma once
// What an HTTP/2 or HTTP/3 request is refused before its handler sees it: the answers HTTP/1's
// parser gives for the same faults, so that no protocol lets through what another refuses.
#include "http/http1_request_parser.h"
#include "server/exchange.h"

namespace portico::server {

// Answers ex with status (its reason phrase as the body) and hands it to the handler's
// on_refused, which counts and logs it: a request refused before routing is still a request.
void refuse_request(Exchange& ex, RequestHandler& handler, int status);

// Refuses ex with 400 (a target an HTTP/1 request line could not carry: the upstream must not
// read a different path than the router did), 414 or 413 and returns true; false if the
// request may go on.
bool refuse_framed_request(Exchange& ex, RequestHandler& handler, const http::RequestHead& r,
                           const http::ParserLimits& lim);

} // namespace portico::server
