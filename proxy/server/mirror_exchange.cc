#include "server/mirror_exchange.h"

namespace portico::server {

MirrorExchange* MirrorExchange::start(struct ev_loop* loop, RequestHandler& handler,
                                      const http::RequestHead& head, std::string_view authority,
                                      bool body_follows, std::string_view client, uint16_t listener,
                                      bool over_tls, int32_t shadow_cluster, Outcomes outcomes) {
  auto* ex = new MirrorExchange();
  ex->loop_ = loop;
  ex->handler_ = &handler;
  ex->listener_index_ = listener;
  ex->over_tls_ = over_tls;
  ex->shadow_cluster_ = shadow_cluster;
  ex->outcomes_ = outcomes;
  ex->client_address_ = ex->arena_.copy(client);
  ex->copy_request(head);
  ex->request_.authority = ex->arena_.copy(authority);
  ex->request_.content_length = head.content_length;
  ex->request_.chunked = head.chunked;
  ex->request_ended_ = !body_follows;
  handler.on_request(*ex);
  if (ex->finished_)
    return nullptr; // refused at once (a breaker): counted, and gone
  if (!body_follows) {
    if (ex->listener_)
      ex->listener_->on_request_end(*ex);
    return ex->finished_ ? nullptr : ex;
  }
  return ex;
}

void MirrorExchange::body(std::string_view data) {
  if (!finished_ && listener_ && !data.empty())
    listener_->on_request_body(*this, data);
}

void MirrorExchange::end(std::span<const http::Header> trailers) {
  if (finished_ || request_ended_)
    return;
  request_ended_ = true;
  if (listener_ && !trailers.empty())
    listener_->on_request_trailers(*this, trailers);
  if (listener_ && !finished_)
    listener_->on_request_end(*this);
}

void MirrorExchange::send_head(const http::ResponseHead& head) {
  head_sent_ = true;
  response_status_ = head.status;
}

void MirrorExchange::finish() {
  if (finished_)
    return;
  finished_ = true;
  response_ended_ = true;
  core::Counter* outcome =
      response_status_ > 0 && response_status_ < 500 ? outcomes_.answered : outcomes_.failed;
  if (outcome)
    outcome->inc();
  if (Owner* o = owner_) {
    owner_ = nullptr;
    o->on_mirror_gone();
  }
  if (auto* l = listener_) {
    listener_ = nullptr;
    l->on_exchange_close(*this);
  }
  core::DeferredQueue::of(loop_)->dispose(this);
}

} // namespace portico::server
