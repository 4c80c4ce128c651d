#include "server/framed_request_limits.h"

#include "http/http1_strict_scanner.h"
#include "http/response_head.h"

namespace portico::server {

void refuse_request(Exchange& ex, RequestHandler& handler, int status) {
  ex.respond(status, "text/plain", http::ReasonBody(status).view());
  handler.on_refused(ex, status);
}

bool refuse_framed_request(Exchange& ex, RequestHandler& handler, const http::RequestHead& r,
                           const http::ParserLimits& lim) {
  int status = 0;
  if (!r.target.empty() && !http::is_valid_request_target(r.target))
    status = 400;
  else if (r.target.size() > lim.max_uri_bytes)
    status = 414;
  else if (lim.max_body_bytes >= 0 && r.content_length > lim.max_body_bytes)
    status = 413;
  if (status == 0)
    return false;
  refuse_request(ex, handler, status);
  return true;
}

} // namespace portico::server
