#pragma once
// POST /echo: the request body streamed back as it arrives. When the client reads slower than it
// sends, reading its body pauses, so memory stays bounded whatever the body's size. Request
// trailers come back as response trailers (where the response's framing can carry them).
#include "core/deferred_queue.h"
#include "server/exchange.h"

#include <vector>

namespace portico::backend {

class EchoApp final : public core::Disposable, public server::ExchangeListener {
public:
  // Returns the response status (200), for the metrics.
  static int start(server::Exchange& ex);

  void on_request_body(server::Exchange& ex, std::string_view data) override;
  void on_request_trailers(server::Exchange& ex, std::span<const http::Header> trailers) override;
  void on_request_end(server::Exchange& ex) override;
  void on_response_writable(server::Exchange& ex) override;
  void on_exchange_close(server::Exchange& ex) override;

private:
  EchoApp() = default;
  bool paused_ = false;
  std::vector<http::Header> trailers_; // copies in the exchange's arena
};

} // namespace portico::backend
