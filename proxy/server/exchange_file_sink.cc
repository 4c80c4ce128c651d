#include "server/exchange_file_sink.h"

#include "core/deferred_queue.h"
#include "server/file_stream.h"

namespace portico::server {

namespace {

// The file read into the response up to the high watermark, the rest from
// on_response_writable. Owns itself (and through the stream, the descriptor).
class FileStreamer final : public core::Disposable, public ExchangeListener {
public:
  static void start(Exchange& ex, int fd, int64_t offset, int64_t length) {
    auto* s = new FileStreamer();
    s->stream_.open(fd, offset, length);
    ex.set_listener(s);
    s->produce(ex); // may close the exchange
  }

  void on_response_writable(Exchange& ex) override { produce(ex); }
  void on_exchange_close(Exchange& ex) override {
    stream_.reset();
    core::DeferredQueue::of(ex.loop())->dispose(this);
  }

private:
  void produce(Exchange& ex) {
    if (!stream_.active())
      return; // HTTP/2 keeps the listener until the stream closes
    auto progress = stream_.pump([&](std::string_view chunk) { ex.send_body(chunk); },
                                 [&] { return ex.above_high_watermark(); });
    if (progress == FileStream::Progress::DONE)
      ex.end_response(); // may close the exchange
    else if (progress == FileStream::Progress::FAILED)
      ex.abort(); // truncated under us: only an abort tells the client
  }

  FileStream stream_;
};

} // namespace

void ExchangeFileSink::send_file(int fd, int64_t offset, int64_t length) {
  if (ex_.send_file(fd, offset, length)) {
    ex_.end_response();
    return;
  }
  FileStreamer::start(ex_, fd, offset, length);
}

} // namespace portico::server
