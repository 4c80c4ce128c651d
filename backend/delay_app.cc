#include "delay_app.h"

#include <charconv>

namespace portico::backend {

namespace {
constexpr long kMaxDelayMs = 600000;
}

int DelayApp::start(server::Exchange& ex, std::string_view ms_text, std::string_view body) {
  long ms = 0;
  auto r = std::from_chars(ms_text.data(), ms_text.data() + ms_text.size(), ms);
  if (r.ec != std::errc() || r.ptr != ms_text.data() + ms_text.size() || ms < 0 ||
      ms > kMaxDelayMs) {
    ex.respond(400, "text/plain", "ms must be 0..600000\n");
    return 400;
  }
  auto* app = new DelayApp(ex, body);
  ex.set_listener(app);
  ev_timer_init(&app->timer_, timer_cb, static_cast<double>(ms) / 1000.0, 0);
  app->timer_.data = app;
  ev_timer_start(ex.loop(), &app->timer_);
  return 200;
}

void DelayApp::timer_cb(struct ev_loop*, ev_timer* w, int) {
  auto* app = static_cast<DelayApp*>(w->data);
  app->ex_.respond(200, "text/plain",
                   app->body_); // may close the exchange: app is then disposed of
}

void DelayApp::on_exchange_close(server::Exchange& ex) {
  ev_timer_stop(ex.loop(), &timer_);
  core::DeferredQueue::of(ex.loop())->dispose(this);
}

} // namespace portico::backend
