#pragma once
// /delay?ms=N: answers after N milliseconds on an ev_timer, so a worker keeps serving others
// meanwhile (the proxy's timeout and queue tests lean on it).
#include "core/deferred_queue.h"
#include "server/exchange.h"

namespace portico::backend {

class DelayApp final : public core::Disposable, public server::ExchangeListener {
public:
  // Returns the status answered (400) or to come (200), for the metrics.
  static int start(server::Exchange& ex, std::string_view ms, std::string_view body);
  void on_exchange_close(server::Exchange& ex) override;

private:
  DelayApp(server::Exchange& ex, std::string_view body) : ex_(ex), body_(body) {}
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);

  server::Exchange& ex_;
  std::string_view body_;
  ev_timer timer_;
};

} // namespace portico::backend
