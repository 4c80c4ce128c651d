#pragma once
// /bytes?n=N: a body of N bytes produced as the client takes it (for download and memory
// tests). The bytes are a repeating pattern, so a client can check them. &max_age=S adds
// Cache-Control: public, max-age=S (a cacheable object for the cache benchmarks).
#include "core/deferred_queue.h"
#include "server/exchange.h"

#include <cstdint>

namespace portico::backend {

class BytesApp final : public core::Disposable, public server::ExchangeListener {
public:
  static constexpr int64_t kMaxBytes = int64_t(1) << 40;
  // Returns the response status (400 or 200), for the metrics.
  static int start(server::Exchange& ex, std::string_view n, std::string_view max_age = {});

  void on_response_writable(server::Exchange& ex) override { produce(ex); }
  void on_exchange_close(server::Exchange& ex) override {
    core::DeferredQueue::of(ex.loop())->dispose(this);
  }

private:
  explicit BytesApp(int64_t left) : left_(left) {}
  void produce(server::Exchange& ex);
  int64_t left_;
};

} // namespace portico::backend
