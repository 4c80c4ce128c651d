#include "server/subrequest.h"

#include <utility>
#include <vector>

namespace portico::server {

Subrequest* Subrequest::start(struct ev_loop* loop, RequestHandler& handler,
                              const http::RequestHead& head, std::string_view client,
                              uint16_t listener, bool over_tls, Receiver* receiver) {
  auto* ex = new Subrequest();
  ex->loop_ = loop;
  ex->handler_ = &handler;
  ex->listener_index_ = listener;
  ex->over_tls_ = over_tls;
  ex->internal_ = true;
  ex->receiver_ = receiver;
  ex->client_address_ = ex->arena_.copy(client);
  ex->copy_request(head);
  handler.on_request(*ex);
  if (ex->finished_)
    return nullptr; // answered at once (no route: a 404)
  ex->request_ended_ = true;
  if (ex->listener_)
    ex->listener_->on_request_end(*ex);
  return ex->finished_ ? nullptr : ex;
}

void Subrequest::cancel() {
  receiver_ = nullptr;
  finish(false);
}

void Subrequest::send_head(const http::ResponseHead& head) {
  head_sent_ = true;
  response_status_ = head.status;
  if (!receiver_)
    return;
  thread_local std::vector<http::Header> fields;
  fields.assign(head.headers.begin(), head.headers.begin() + head.header_count);
  fields.insert(fields.end(), head.more.begin(), head.more.end());
  receiver_->on_subrequest_head(head.status, fields);
}

void Subrequest::send_body(std::string_view data) {
  body_bytes_sent_ += data.size();
  if (receiver_)
    receiver_->on_subrequest_body(data);
}

void Subrequest::finish(bool complete) {
  if (finished_)
    return;
  finished_ = true;
  response_ended_ = true;
  if (Receiver* r = std::exchange(receiver_, nullptr))
    r->on_subrequest_end(complete);
  if (auto* l = listener_) {
    listener_ = nullptr;
    l->on_exchange_close(*this);
  }
  core::DeferredQueue::of(loop_)->dispose(this);
}

} // namespace portico::server
