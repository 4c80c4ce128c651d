#pragma once
// portico-backend's request handler: picks the app for a request's path.
//   /, /hello            hello world (with ?id=K: the counter)
//   /counter?id=K        {"counter":N}
//   /echo                the request body streamed back
//   /status/NNN          an empty-ish response with that status
//   /delay?ms=N          hello world after N ms, without blocking the worker
//   /bytes?n=N           N bytes of body, streamed with backpressure
//   /headers             the request's fields as received, one per line
//   anything else        a static file under --document-root, or 404
#include "server/exchange.h"

#include <cstdint>
#include <functional>

namespace portico::backend {

class CounterStore;
class StaticFiles;

class AppRouter final : public server::RequestHandler {
public:
  AppRouter(CounterStore& counters, StaticFiles* files) : counters_(counters), files_(files) {}
  void on_request(server::Exchange& ex) override;

  // Called before each request is answered (the worker counts toward --max-requests here,
  // so that the retiring response can still say "Connection: close").
  std::function<void()> on_each_request;

private:
  void counter(server::Exchange& ex, std::string_view id);
  CounterStore& counters_;
  StaticFiles* files_;
};

} // namespace portico::backend
