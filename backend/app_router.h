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
// With a RequestMeter (--admin), each request is recorded by app and status.
#include "backend_metrics.h"
#include "counter_app.h"
#include "server/exchange.h"

#include <cstdint>
#include <functional>

namespace portico::server {
class StaticFiles;
}

namespace portico::backend {

class RequestMeter;
using server::StaticFiles;

class AppRouter final : public server::RequestHandler {
public:
  // meter: null when metrics are off.
  AppRouter(CounterStore& counters, StaticFiles* files, RequestMeter* meter = nullptr)
      : counters_(counters), files_(files), meter_(meter) {}
  size_t counters_waiting() const { return counters_.waiting(); }
  void on_request(server::Exchange& ex) override;

  // Called before each request is answered (the worker counts toward --max-requests here,
  // so that the retiring response can still say "Connection: close").
  std::function<void()> on_each_request;

private:
  // Runs the app for the request; returns the status it answered (or will answer) with.
  int dispatch(server::Exchange& ex, App* app);
  int counter(server::Exchange& ex, std::string_view id);
  CounterApp counters_;
  StaticFiles* files_;
  RequestMeter* meter_;
};

} // namespace portico::backend
