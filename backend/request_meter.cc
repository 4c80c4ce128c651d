#include "request_meter.h"

namespace portico::backend {

// Stands in for an app's listener until the exchange closes. Each forwarding call is the last
// thing its method does: the app may close the exchange, and so free this, inside it.
class RequestMeter::Follower final : public server::ExchangeListener {
public:
  explicit Follower(RequestMeter& meter) : meter_(meter) {}

  void on_request_body(server::Exchange& ex, std::string_view data) override {
    inner_->on_request_body(ex, data);
  }
  void on_request_trailers(server::Exchange& ex, std::span<const http::Header> t) override {
    inner_->on_request_trailers(ex, t);
  }
  void on_request_end(server::Exchange& ex) override { inner_->on_request_end(ex); }
  void on_response_writable(server::Exchange& ex) override { inner_->on_response_writable(ex); }
  void on_exchange_close(server::Exchange& ex) override {
    inner_->on_exchange_close(ex); // the app may delete its listener here
    meter_.finish(this, ex);
  }

  RequestMeter& meter_;
  server::ExchangeListener* inner_ = nullptr;
  App app_ = App::HELLO;
  int status_ = 0;
  double started_ = 0;
};

RequestMeter::RequestMeter(WorkerSlot& slot) : slot_(slot) {}

RequestMeter::~RequestMeter() = default;

double RequestMeter::begin() {
  slot_.set_in_flight(++in_flight_);
  return ev_time();
}

void RequestMeter::end_dispatch(server::Exchange& ex, App app, int status, double started) {
  server::ExchangeListener* inner = ex.listener();
  if (ex.response_ended() || !inner) {
    // Answered; or closed under the app (an abort), whose listener has heard the close.
    record(app, ex.head_sent() ? status : 0, started);
    return;
  }
  Follower* f;
  if (free_.empty()) {
    followers_.push_back(std::make_unique<Follower>(*this));
    f = followers_.back().get();
  } else {
    f = free_.back();
    free_.pop_back();
  }
  f->inner_ = inner;
  f->app_ = app;
  f->status_ = status;
  f->started_ = started;
  ex.set_listener(f);
}

void RequestMeter::finish(Follower* f, server::Exchange& ex) {
  // The status actually sent: an app that answers later knew only what it meant to.
  record(f->app_, ex.head_sent() ? ex.response_status() : 0, f->started_);
  f->inner_ = nullptr;
  free_.push_back(f);
}

void RequestMeter::record(App app, int status, double started) {
  AppStats& s = slot_.app(app);
  s.requests[status_class(status)].inc();
  s.duration.observe(ev_time() - started);
  slot_.set_in_flight(--in_flight_);
}

} // namespace portico::backend
