#include "echo_app.h"

namespace portico::backend {

int EchoApp::start(server::Exchange& ex) {
  const auto& req = ex.request();
  http::ResponseHead head;
  head.content_length = req.chunked ? -1 : std::max<int64_t>(req.content_length, 0);
  const http::Header* ct = req.find("content-type");
  head.add("content-type", ct ? ct->value : "application/octet-stream");
  ex.send_head(head);
  if (head.content_length == 0) {
    ex.end_response();
    return 200;
  }
  ex.set_listener(new EchoApp);
  return 200;
}

void EchoApp::on_request_body(server::Exchange& ex, std::string_view data) {
  ex.send_body(data);
  if (!paused_ && ex.above_high_watermark()) {
    paused_ = true;
    ex.pause_request_body();
  }
}

void EchoApp::on_request_trailers(server::Exchange& ex, std::span<const http::Header> trailers) {
  for (const auto& t : trailers)
    trailers_.push_back({ex.arena().copy(t.name), ex.arena().copy(t.value)});
}

void EchoApp::on_request_end(server::Exchange& ex) {
  // Either may close the exchange before returning.
  if (trailers_.empty())
    ex.end_response();
  else
    ex.end_response_with_trailers(trailers_);
}

void EchoApp::on_response_writable(server::Exchange& ex) {
  if (paused_) {
    paused_ = false;
    ex.resume_request_body();
  }
}

void EchoApp::on_exchange_close(server::Exchange& ex) {
  // Destroyed after the callback that closed the exchange has returned (it may be ours).
  core::DeferredQueue::of(ex.loop())->dispose(this);
}

} // namespace portico::backend
