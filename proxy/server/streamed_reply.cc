#include "server/streamed_reply.h"

#include "core/deferred_queue.h"

namespace portico::server {

namespace {

class StreamedReply final : public core::Disposable, public ExchangeListener {
public:
  explicit StreamedReply(std::string body) : body_(std::move(body)) {}

  // Writes until the buffer is above its high watermark or the body is out.
  void produce(Exchange& ex) {
    constexpr size_t kPiece = Exchange::kLowWatermark;
    while (!closed_ && at_ < body_.size() && !ex.above_high_watermark()) {
      std::string_view piece = std::string_view(body_).substr(at_, kPiece);
      at_ += piece.size();
      ex.send_body(piece);
    }
    if (!closed_ && at_ == body_.size() && !ended_) {
      ended_ = true;
      ex.end_response(); // may close the exchange: this outlives it in the deferred queue
    }
  }
  void on_response_writable(Exchange& ex) override { produce(ex); }
  void on_exchange_close(Exchange& ex) override {
    closed_ = true; // a client gone mid-body closes it inside send_body
    ex.set_listener(nullptr);
    core::DeferredQueue::of(ex.loop())->dispose(this);
  }

private:
  std::string body_;
  size_t at_ = 0;
  bool ended_ = false;
  bool closed_ = false;
};

} // namespace

void respond_streamed(Exchange& ex, int status, std::string_view content_type, std::string body) {
  if (body.size() <= Exchange::kHighWatermark || ex.request().is_head()) {
    ex.respond(status, content_type, body);
    return;
  }
  http::ResponseHead head;
  head.status = status;
  head.content_length = static_cast<int64_t>(body.size());
  head.add("content-type", content_type);
  ex.send_head(head);
  auto* reply = new StreamedReply(std::move(body));
  ex.set_listener(reply);
  reply->produce(ex);
}

} // namespace portico::server
