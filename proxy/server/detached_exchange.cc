#include "server/detached_exchange.h"

namespace portico::server {

void DetachedExchange::start(struct ev_loop* loop, RequestHandler& handler,
                             const http::RequestHead& head, uint16_t listener_index,
                             bool over_tls) {
  auto* ex = new DetachedExchange();
  ex->loop_ = loop;
  ex->handler_ = &handler;
  ex->listener_index_ = listener_index;
  ex->over_tls_ = over_tls;
  ex->client_address_ = "-"; // no client: the proxy itself
  ex->copy_request(head);
  handler.on_request(*ex);
  if (ex->finished_)
    return; // answered at once (no route: a 404)
  ex->request_ended_ = true;
  if (ex->listener_)
    ex->listener_->on_request_end(*ex);
}

void DetachedExchange::send_head(const http::ResponseHead& head) {
  head_sent_ = true;
  response_status_ = head.status;
}

void DetachedExchange::finish() {
  if (finished_)
    return;
  finished_ = true;
  response_ended_ = true;
  if (auto* l = listener_) {
    listener_ = nullptr;
    l->on_exchange_close(*this);
  }
  core::DeferredQueue::of(loop_)->dispose(this);
}

} // namespace portico::server
