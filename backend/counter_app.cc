#include "counter_app.h"

#include "core/json_escape.h"

#include <charconv>

namespace portico::backend {

namespace {
constexpr const char* kJson = "application/json";
} // namespace

// Follows one exchange while the store answers; the store's answer and the exchange's close
// may come in either order.
class CounterApp::Request final : public server::ExchangeListener, public CounterWaiter {
public:
  explicit Request(CounterApp& app) : app_(app) {}

  void on_counter(core::expected<uint64_t, std::string> value) override {
    waiting_ = false;
    if (!ex_)
      return;
    server::Exchange& ex = *ex_;
    if (!value) {
      std::string body = "{\"error\":\"counter store unavailable: ";
      core::append_json_escaped(body, value.error());
      body += "\"}\n";
      ex.respond(503, kJson, body); // may close the exchange: on_exchange_close releases this
      return;
    }
    char body[48] = "{\"counter\":";
    size_t n = 11;
    n = static_cast<size_t>(std::to_chars(body + n, body + sizeof body - 2, *value).ptr - body);
    body[n++] = '}';
    ex.respond(200, kJson, {body, n});
  }

  void on_exchange_close(server::Exchange&) override {
    ex_ = nullptr;
    if (waiting_)
      app_.store_.cancel(this); // the client went away first
    waiting_ = false;
    app_.release(this);
  }

  CounterApp& app_;
  server::Exchange* ex_ = nullptr;
  bool waiting_ = false;
};

CounterApp::CounterApp(CounterStore& store) : store_(store) {}

CounterApp::~CounterApp() = default;

int CounterApp::start(server::Exchange& ex, std::string_view id) {
  Request* r;
  if (free_.empty()) {
    all_.push_back(std::make_unique<Request>(*this));
    r = all_.back().get();
  } else {
    r = free_.back();
    free_.pop_back();
  }
  r->ex_ = &ex;
  r->waiting_ = true;
  ex.set_listener(r);
  store_.increment(id, r); // a shared-memory store answers (and may close ex) before returning
  return ex.response_ended() ? ex.response_status() : 200;
}

void CounterApp::release(Request* r) {
  free_.push_back(r);
}

} // namespace portico::backend
