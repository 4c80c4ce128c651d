// RequestMeter: a request is recorded once, by app and status class, whether the app answers
// at once, later through its own listener (which the meter forwards to), or not at all.
#include "request_meter.h"

#include <gtest/gtest.h>

#include <string>

namespace portico::backend {
namespace {

// An exchange that closes like the HTTP/1 session: once both the request and the response
// have ended, or at once on abort.
class FakeExchange final : public server::Exchange {
public:
  explicit FakeExchange(bool request_ended = true) { request_ended_ = request_ended; }
  void send_head(const http::ResponseHead& head) override {
    head_sent_ = true;
    response_status_ = head.status;
    status = head.status;
  }
  void send_body(std::string_view data) override { body += data; }
  void end_response() override {
    response_ended_ = true;
    if (request_ended_)
      close();
  }
  size_t buffered() const override { return 0; }
  void pause_request_body() override {}
  void resume_request_body() override {}
  void abort() override { close(); }

  void end_request() {
    request_ended_ = true;
    if (auto* l = listener_)
      l->on_request_end(*this);
    else if (response_ended_)
      close();
  }
  void close() {
    if (closed)
      return;
    closed = true;
    if (auto* l = listener_) {
      listener_ = nullptr;
      l->on_exchange_close(*this);
    }
  }

  int status = 0;
  std::string body;
  bool closed = false;
};

// An app's listener that records what it hears, and answers when the request ends.
struct AppListener final : server::ExchangeListener {
  void on_request_body(server::Exchange&, std::string_view d) override { body += d; }
  void on_request_end(server::Exchange& ex) override {
    ++ends;
    if (answer_on_end)
      ex.respond(200, "text/plain", "late\n");
  }
  void on_exchange_close(server::Exchange&) override { ++closes; }
  std::string body;
  int ends = 0, closes = 0;
  bool answer_on_end = true;
};

class RequestMeterTest : public ::testing::Test {
protected:
  RequestMeterTest() : metrics_(1, {0.001, 1}) { slot_ = metrics_.acquire(); }
  uint64_t count(App a, size_t cls) { return metrics_.totals(a).requests[cls]; }
  WorkerSlot& slot() { return metrics_.slot(slot_); }

  BackendMetrics metrics_;
  int slot_ = -1;
};

TEST_F(RequestMeterTest, AnsweredAtOnce) {
  RequestMeter meter(slot());
  FakeExchange ex;
  double t = meter.begin();
  EXPECT_EQ(slot().in_flight(), 1);
  ex.respond(404, "text/plain", "no\n"); // closes the exchange under the app
  meter.end_dispatch(ex, App::NOT_FOUND, 404, t);
  EXPECT_EQ(count(App::NOT_FOUND, 3), 1u);
  EXPECT_EQ(metrics_.totals(App::NOT_FOUND).count, 1u);
  EXPECT_EQ(slot().in_flight(), 0);
  EXPECT_EQ(meter.following(), 0u);
}

TEST_F(RequestMeterTest, AnsweredAtOnceWithTheRequestBodyStillComing) {
  RequestMeter meter(slot());
  FakeExchange ex(false);
  double t = meter.begin();
  ex.respond(200, "text/plain", "hi\n");
  meter.end_dispatch(ex, App::HELLO, 200, t);
  EXPECT_EQ(count(App::HELLO, 1), 1u); // the response is over: recorded now
  EXPECT_EQ(ex.listener(), nullptr);   // and the exchange not followed
  ex.end_request();
  EXPECT_TRUE(ex.closed);
  EXPECT_EQ(count(App::HELLO, 1), 1u);
  EXPECT_EQ(slot().in_flight(), 0);
}

TEST_F(RequestMeterTest, LaterAnswerThroughTheAppsListener) {
  RequestMeter meter(slot());
  FakeExchange ex(false);
  AppListener app;
  double t = meter.begin();
  ex.set_listener(&app);
  meter.end_dispatch(ex, App::ECHO, 200, t);
  EXPECT_NE(ex.listener(), &app); // the meter stands in between
  EXPECT_EQ(meter.following(), 1u);
  EXPECT_EQ(slot().in_flight(), 1);
  EXPECT_EQ(count(App::ECHO, 1), 0u);

  ex.listener()->on_request_body(ex, "abc");
  EXPECT_EQ(app.body, "abc");
  ex.end_request(); // the app answers, which closes the exchange
  EXPECT_EQ(app.ends, 1);
  EXPECT_EQ(app.closes, 1);
  EXPECT_EQ(ex.body, "late\n");
  EXPECT_EQ(count(App::ECHO, 1), 1u);
  EXPECT_EQ(slot().in_flight(), 0);
  EXPECT_EQ(meter.following(), 0u);

  // The follower is reused for the next exchange.
  FakeExchange ex2(false);
  AppListener app2;
  t = meter.begin();
  ex2.set_listener(&app2);
  meter.end_dispatch(ex2, App::ECHO, 200, t);
  ex2.end_request();
  EXPECT_EQ(count(App::ECHO, 1), 2u);
  EXPECT_EQ(meter.following(), 0u);
}

TEST_F(RequestMeterTest, ClientGoneBeforeTheAnswerCountsAs4xx) {
  RequestMeter meter(slot());
  FakeExchange ex(false);
  AppListener app;
  double t = meter.begin();
  ex.set_listener(&app);
  meter.end_dispatch(ex, App::DELAY, 200, t); // the 200 was promised, never sent
  ex.close();
  EXPECT_EQ(app.closes, 1);
  EXPECT_EQ(count(App::DELAY, 1), 0u);
  EXPECT_EQ(count(App::DELAY, 3), 1u);
  EXPECT_EQ(slot().in_flight(), 0);
}

TEST_F(RequestMeterTest, AbortedUnderTheAppWhileItRan) {
  RequestMeter meter(slot());
  FakeExchange ex(false);
  AppListener app;
  double t = meter.begin();
  http::ResponseHead head;
  head.content_length = 100;
  ex.send_head(head);
  ex.set_listener(&app);
  ex.abort(); // the app's listener hears the close; the meter did not stand in yet
  meter.end_dispatch(ex, App::STATIC, 200, t);
  EXPECT_EQ(app.closes, 1);
  EXPECT_EQ(count(App::STATIC, 1), 1u); // the head went out: counted by its status
  EXPECT_EQ(slot().in_flight(), 0);
  EXPECT_EQ(meter.following(), 0u);
}

TEST_F(RequestMeterTest, InFlightCountsOverlappingRequests) {
  RequestMeter meter(slot());
  FakeExchange a(false), b(false);
  AppListener la, lb;
  la.answer_on_end = lb.answer_on_end = true;
  double t = meter.begin();
  a.set_listener(&la);
  meter.end_dispatch(a, App::DELAY, 200, t);
  t = meter.begin();
  b.set_listener(&lb);
  meter.end_dispatch(b, App::DELAY, 200, t);
  EXPECT_EQ(slot().in_flight(), 2);
  a.end_request();
  EXPECT_EQ(slot().in_flight(), 1);
  b.end_request();
  EXPECT_EQ(slot().in_flight(), 0);
  EXPECT_EQ(count(App::DELAY, 1), 2u);
}

} // namespace
} // namespace portico::backend
