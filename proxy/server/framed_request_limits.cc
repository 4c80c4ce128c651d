#include "server/framed_request_limits.h"

#include "http/http1_strict_scanner.h"

namespace portico::server {

bool refuse_framed_request(Exchange& ex, const http::RequestHead& r,
                           const http::ParserLimits& lim) {
  if (!r.target.empty() && !http::is_valid_request_target(r.target)) {
    ex.respond(400, "text/plain", "Bad Request\n");
    return true;
  }
  if (r.target.size() > lim.max_uri_bytes) {
    ex.respond(414, "text/plain", "URI Too Long\n");
    return true;
  }
  if (lim.max_body_bytes >= 0 && r.content_length > lim.max_body_bytes) {
    ex.respond(413, "text/plain", "Content Too Large\n");
    return true;
  }
  return false;
}

} // namespace portico::server
