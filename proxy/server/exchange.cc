#include "server/exchange.h"

#include <string>

namespace portico::server {

void Exchange::respond(int status, std::string_view content_type, std::string_view body) {
  http::ResponseHead head;
  head.status = status;
  head.content_length = static_cast<int64_t>(body.size());
  if (!content_type.empty())
    head.add("content-type", content_type);
  send_head(head);
  if (!body.empty() && !request_.is_head())
    send_body(body);
  end_response();
}

} // namespace portico::server
