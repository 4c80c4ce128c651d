#include "server/exchange.h"

#include <string>

namespace portico::server {

void Exchange::respond(int status, std::string_view content_type, std::string_view body,
                       std::span<const http::Header> more) {
  http::ResponseHead head;
  head.status = status;
  head.content_length = static_cast<int64_t>(body.size());
  if (!content_type.empty())
    head.add("content-type", content_type);
  for (const auto& f : more)
    head.add(f.name, f.value);
  send_head(head);
  if (!body.empty() && !request_.is_head())
    send_body(body);
  end_response();
}

void Exchange::copy_request(const http::RequestHead& head) {
  request_.method = arena_.copy(head.method);
  request_.scheme = arena_.copy(head.scheme);
  request_.authority = arena_.copy(head.authority);
  request_.target = arena_.copy(head.target);
  request_.version = head.version;
  for (const auto& h : head.headers)
    request_.headers.push_back({arena_.copy(h.name), arena_.copy(h.value)});
}

} // namespace portico::server
