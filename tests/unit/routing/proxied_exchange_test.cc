// ProxiedExchange between a fake client Exchange (records what the client would see, and plays
// the client's part: body, end, going away) and a real Cluster whose endpoint is a unix socket
// the test itself serves with raw bytes. What the bridge promises: a response relayed whole, a
// body relayed in order, a local answer (502, 503) when the upstream cannot be had, a cut
// response never passed off as a clean short one, and nothing reaching the client after it
// has gone.
#include "core/deferred_queue.h"
#include "metrics/worker_metrics.h"
#include "routing/filter.h"
#include "routing/proxied_exchange.h"
#include "server/exchange.h"
#include "upstream/cluster.h"
#include "upstream/dns_resolver.h"

#include <ev.h>
#include <gtest/gtest.h>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace portico::routing {
namespace {
using namespace portico::upstream;

class FakeExchange final : public server::Exchange {
public:
  FakeExchange(struct ev_loop* loop, std::string_view method, int64_t content_length = -1) {
    loop_ = loop;
    request_.method = method;
    request_.target = "/item";
    request_.authority = "app.example";
    request_.version = http::Version::HTTP_1_1;
    request_.content_length = content_length;
    request_ended_ = content_length <= 0;
    client_address_ = "192.0.2.7";
  }
  ~FakeExchange() override {
    if (!closed)
      close(); // a test that stops early still lets the listener go
  }

  // The client's side.
  void body(std::string_view data) { listener_->on_request_body(*this, data); }
  void end_request() {
    request_ended_ = true;
    listener_->on_request_end(*this);
    close_if_done();
  }
  void client_gone() { close(); }

  // The response side, as the session would implement it.
  void send_head(const http::ResponseHead& head) override {
    head_sent_ = true;
    status = head.status;
  }
  void send_body(std::string_view data) override { response.append(data); }
  void end_response() override {
    response_ended_ = true;
    close_if_done();
  }
  size_t buffered() const override { return 0; }
  void pause_request_body() override { ++pauses; }
  void resume_request_body() override { ++resumes; }
  void abort() override {
    aborted = true;
    close();
  }

  int status = 0;
  std::string response;
  bool aborted = false;
  bool closed = false;
  int pauses = 0, resumes = 0;

private:
  void close_if_done() {
    if (response_ended_ && request_ended_ && !closed)
      close();
  }
  void close() {
    closed = true;
    if (listener_)
      listener_->on_exchange_close(*this);
    listener_ = nullptr;
  }
};

// What a filter keeping the response after the client went (as a cache storing it does) saw.
struct Kept {
  std::string seen;
  bool ended = false, closed = false;
};

class Keeper final : public Filter {
public:
  explicit Keeper(Kept& k) : k_(k) {}
  FilterStatus on_response_body(std::string_view& data, bool end) override {
    k_.seen.append(data);
    k_.ended |= end;
    return FilterStatus::CONTINUE;
  }
  bool keeps_response() const override { return !k_.ended; }
  void on_exchange_close() override { k_.closed = true; }

private:
  Kept& k_;
};

class KeeperFactory final : public FilterFactory {
public:
  explicit KeeperFactory(Kept& k) : k_(k) {}
  Filter* create(const server::Exchange&) const override { return new Keeper(k_); }

private:
  Kept& k_;
};

// Another exchange already kept, for filling the list up to its cap.
struct OtherKept final : KeptExchange {
  void abandon() override {}
};

class ProxiedExchangeTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/portico-px-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    loop_ = ev_loop_new(EVFLAG_AUTO);
    deferred_ = std::make_unique<core::DeferredQueue>(loop_);
    resolver_ = std::make_unique<DnsResolver>(loop_);
    cfg_.name = "app";
    cfg_.endpoints = {"unix:" + dir_ + "/s"};
    cfg_.queue_timeout = 0.05;
    metrics_ = std::make_unique<metrics::ClusterMetrics>(&bounds_, 1);
    route_ = std::make_unique<metrics::RouteMetrics>(&bounds_);
    ctx_ = {&fwd_, deferred_.get(), nullptr};
  }
  void TearDown() override {
    cluster_.reset();
    deferred_->run();
    resolver_.reset();
    deferred_.reset();
    ev_loop_destroy(loop_);
    for (int fd : accepted_)
      ::close(fd);
    if (listen_fd_ >= 0)
      ::close(listen_fd_);
    ::unlink((dir_ + "/s").c_str());
    ::rmdir(dir_.c_str());
  }
  void make_cluster(bool listening, int max_connections = 0) {
    if (listening) {
      listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
      sockaddr_un sa{};
      sa.sun_family = AF_UNIX;
      std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s/s", dir_.c_str());
      ASSERT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
      ASSERT_EQ(::listen(listen_fd_, 16), 0);
    }
    cfg_.max_connections = max_connections;
    cluster_ = std::make_unique<Cluster>(loop_, *deferred_, *resolver_, cfg_, 0, 1, *metrics_);
    route_entry_.cluster = cluster_.get();
    route_entry_.metrics = route_.get();
  }
  void start(FakeExchange& ex) {
    ProxiedExchange::start(ex, route_entry_, ctx_, nullptr);
    // As the sessions do: a request without a body ends as soon as its head is handled.
    if (ex.request_ended() && ex.listener())
      ex.listener()->on_request_end(ex);
  }
  template <typename F> bool run_until(F done) {
    ev_tstamp until = ev_time() + 2;
    while (!done() && ev_time() < until)
      ev_run(loop_, EVRUN_NOWAIT);
    return done();
  }
  // The upstream's side: accepts the next connection and reads until `until` is in what the
  // proxy sent (running the proxy's loop meanwhile).
  int accept_upstream() {
    int fd = -1;
    run_until([&] { return fd >= 0 || (fd = ::accept(listen_fd_, nullptr, nullptr)) >= 0; });
    if (fd >= 0)
      accepted_.push_back(fd);
    return fd;
  }
  std::string read_until(int fd, std::string_view until) {
    std::string in;
    run_until([&] {
      char buf[4096];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0;)
        in.append(buf, static_cast<size_t>(n));
      return in.find(until) != std::string::npos;
    });
    return in;
  }
  void reply(int fd, std::string_view bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // Serves one GET on a fresh connection and leaves that connection pooled, for the next
  // request to reuse; returns the upstream's end of it.
  int serve_one_keepalive() {
    FakeExchange warm(loop_, "GET");
    start(warm);
    int up = accept_upstream();
    if (up < 0)
      return -1;
    read_until(up, "\r\n\r\n");
    reply(up, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    run_until([&] { return warm.closed && cluster_->pools()[0]->idle() == 1; });
    return warm.status == 200 && cluster_->pools()[0]->idle() == 1 ? up : -1;
  }
  uint64_t requests_of_class(int cls, metrics::AnsweredBy by) {
    uint64_t n = 0;
    route_->requests.for_each([&](uint16_t, metrics::Protocol, int code, metrics::AnsweredBy b,
                                  uint64_t k) { n += code / 100 == cls && b == by ? k : 0; });
    return n;
  }

  std::string dir_;
  int listen_fd_ = -1;
  std::vector<int> accepted_;
  struct ev_loop* loop_ = nullptr;
  std::unique_ptr<core::DeferredQueue> deferred_;
  std::unique_ptr<DnsResolver> resolver_;
  config::ClusterConfig cfg_;
  std::vector<double> bounds_;
  std::unique_ptr<metrics::ClusterMetrics> metrics_;
  std::unique_ptr<metrics::RouteMetrics> route_;
  std::unique_ptr<Cluster> cluster_;
  ForwardingOptions fwd_;
  Route route_entry_;
  RouterContext ctx_;
};

TEST_F(ProxiedExchangeTest, AResponseIsRelayedWhole) {
  make_cluster(true);
  FakeExchange ex(loop_, "GET");
  start(ex);
  int up = accept_upstream();
  ASSERT_GE(up, 0);
  std::string req = read_until(up, "\r\n\r\n");
  EXPECT_EQ(req.rfind("GET /item HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_NE(req.find("\r\nhost: app.example\r\n"), std::string::npos) << req;
  EXPECT_NE(req.find("\r\nx-forwarded-for: 192.0.2.7\r\n"), std::string::npos) << req;
  reply(up, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-App: 1\r\n\r\nhello");
  ASSERT_TRUE(run_until([&] { return ex.closed; }));
  EXPECT_EQ(ex.status, 200);
  EXPECT_EQ(ex.response, "hello");
  EXPECT_FALSE(ex.aborted);
  EXPECT_EQ(requests_of_class(2, metrics::AnsweredBy::UPSTREAM), 1u);
  EXPECT_EQ(route_->bytes_sent.get(), 5u);
}

TEST_F(ProxiedExchangeTest, ARequestBodyArrivesInOrderWithItsLength) {
  make_cluster(true);
  FakeExchange ex(loop_, "POST", 11);
  start(ex);
  ex.body("hello ");
  int up = accept_upstream();
  ASSERT_GE(up, 0);
  ex.body("world");
  ex.end_request();
  std::string req = read_until(up, "hello world");
  EXPECT_NE(req.find("\r\ncontent-length: 11\r\n"), std::string::npos) << req;
  EXPECT_EQ(req.substr(req.size() - 11), "hello world");
  reply(up, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
  ASSERT_TRUE(run_until([&] { return ex.closed; }));
  EXPECT_EQ(ex.status, 201);
  EXPECT_EQ(route_->bytes_received.get(), 11u);
}

TEST_F(ProxiedExchangeTest, NoUpstreamListeningIsA502) {
  make_cluster(false);
  FakeExchange ex(loop_, "GET");
  start(ex);
  ASSERT_TRUE(run_until([&] { return ex.closed; }));
  EXPECT_EQ(ex.status, 502);
  EXPECT_EQ(ex.response, "Bad Gateway\n");
  EXPECT_EQ(metrics_->errors.connect_refused().get(), 1u);
  EXPECT_EQ(requests_of_class(5, metrics::AnsweredBy::PROXY), 1u);
}

TEST_F(ProxiedExchangeTest, AFullPoolPastTheQueueTimeoutIsA503) {
  make_cluster(true, 1);
  FakeExchange first(loop_, "GET"), second(loop_, "GET");
  start(first);
  start(second); // waits: one connection per worker
  ASSERT_TRUE(run_until([&] { return second.closed; }));
  EXPECT_EQ(second.status, 503);
  EXPECT_FALSE(first.closed);
  EXPECT_EQ(metrics_->errors.queue_timeout().get(), 1u);
}

TEST_F(ProxiedExchangeTest, AResponseCutMidBodyAbortsTheClient) {
  make_cluster(true);
  FakeExchange ex(loop_, "GET");
  start(ex);
  int up = accept_upstream();
  ASSERT_GE(up, 0);
  read_until(up, "\r\n\r\n");
  reply(up, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
  ASSERT_TRUE(run_until([&] { return ex.response == "partial"; }));
  ::shutdown(up, SHUT_RDWR);
  ASSERT_TRUE(run_until([&] { return ex.closed; }));
  EXPECT_TRUE(ex.aborted); // never a clean end of a short body
  EXPECT_FALSE(ex.response_ended());
}

TEST_F(ProxiedExchangeTest, AClientGoneMidRequestReleasesTheUpstream) {
  make_cluster(true);
  auto ex = std::make_unique<FakeExchange>(loop_, "GET");
  start(*ex);
  int up = accept_upstream();
  ASSERT_GE(up, 0);
  read_until(up, "\r\n\r\n");
  ex->client_gone();
  ex.reset(); // the exchange is gone: nothing may reach it now
  // The connection mid-exchange cannot be trusted again: it is closed, not pooled.
  char c;
  ASSERT_TRUE(run_until([&] { return ::recv(up, &c, 1, MSG_DONTWAIT) == 0; }));
  EXPECT_EQ(requests_of_class(4, metrics::AnsweredBy::NONE), 1u); // 499, nginx's "client closed"
}

TEST_F(ProxiedExchangeTest, AGetTheUpstreamDroppedUnansweredIsSentOnceMore) {
  make_cluster(true);
  int up = serve_one_keepalive();
  ASSERT_GE(up, 0);
  FakeExchange ex(loop_, "GET");
  start(ex); // on the pooled connection
  read_until(up, "\r\n\r\n");
  ::shutdown(up, SHUT_RDWR); // gone without a response byte: maybe never seen
  int again = accept_upstream();
  ASSERT_GE(again, 0);
  std::string req = read_until(again, "\r\n\r\n");
  EXPECT_EQ(req.rfind("GET /item HTTP/1.1\r\n", 0), 0u);
  reply(again, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  ASSERT_TRUE(run_until([&] { return ex.closed; }));
  EXPECT_EQ(ex.status, 200);
  EXPECT_EQ(ex.response, "ok");
  EXPECT_EQ(metrics_->errors.retried().get(), 1u);
}

TEST_F(ProxiedExchangeTest, APostTheUpstreamDroppedUnansweredIsNotSentAgain) {
  make_cluster(true);
  int up = serve_one_keepalive();
  ASSERT_GE(up, 0);
  FakeExchange ex(loop_, "POST", 4);
  start(ex);
  ex.body("once");
  ex.end_request();
  read_until(up, "once");
  ::shutdown(up, SHUT_RDWR); // it may have been applied: never replayed
  ASSERT_TRUE(run_until([&] { return ex.closed; }));
  EXPECT_EQ(ex.status, 502);
  EXPECT_EQ(metrics_->errors.retried().get(), 0u);
  int fd = ::accept(listen_fd_, nullptr, nullptr);
  EXPECT_LT(fd, 0) << "the POST went to a second connection";
  if (fd >= 0)
    ::close(fd);
}

TEST_F(ProxiedExchangeTest, ABodyStillComingAfterA502IsDroppedNotHeld) {
  // The proxy answered (no upstream) while the client was still sending: what follows is
  // read and dropped, never held for an upstream that will not come, nor a reason to pause
  // the client (whose connection would then hang until a timeout).
  make_cluster(false);
  FakeExchange ex(loop_, "POST", 3 * 64 * 1024);
  start(ex);
  ASSERT_TRUE(run_until([&] { return ex.status == 502; }));
  std::string chunk(64 * 1024, 'x');
  for (int i = 0; i < 3; ++i)
    ex.body(chunk);
  EXPECT_EQ(ex.pauses, 0);
  ex.end_request();
  EXPECT_TRUE(ex.closed);
}

// A GET on a route whose filter keeps the response (kept is the router's list): its client
// goes after the first 5 of 10 body bytes, and the exchange with it. The upstream's end.
class KeptResponseTest : public ProxiedExchangeTest {
protected:
  int client_gone_mid_body() {
    ctx_.kept = &kept_;
    route_entry_.filters.push_back(std::make_unique<KeeperFactory>(k_));
    route_entry_.http1_filters = true;
    auto ex = std::make_unique<FakeExchange>(loop_, "GET");
    start(*ex);
    int up = accept_upstream();
    if (up < 0)
      return -1;
    read_until(up, "\r\n\r\n");
    reply(up, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello");
    if (!run_until([&] { return ex->response == "hello"; }))
      return -1;
    ex->client_gone();
    ex.reset(); // the exchange is gone: nothing may reach it now (the ASan build checks)
    return up;
  }
  KeptExchanges kept_;
  Kept k_;
};

TEST_F(KeptResponseTest, AResponseAFilterKeepsIsReadToItsEndAfterTheClientWent) {
  make_cluster(true);
  int up = client_gone_mid_body();
  ASSERT_GE(up, 0);
  EXPECT_EQ(kept_.size(), 1u);
  EXPECT_FALSE(k_.closed);
  reply(up, "world");
  ASSERT_TRUE(run_until([&] { return k_.closed; }));
  EXPECT_EQ(k_.seen, "helloworld");
  EXPECT_TRUE(k_.ended);
  EXPECT_TRUE(kept_.empty());
  // Read whole, the connection is as good as any: pooled, not closed.
  EXPECT_TRUE(run_until([&] { return cluster_->pools()[0]->idle() == 1; }));
}

TEST_F(KeptResponseTest, PastTheCapAResponseIsCutWithItsClientAsBefore) {
  make_cluster(true);
  std::vector<OtherKept> others(ProxiedExchange::kMaxKept);
  for (auto& o : others)
    kept_.push_back(&o);
  int up = client_gone_mid_body();
  ASSERT_GE(up, 0);
  EXPECT_TRUE(k_.closed);
  EXPECT_EQ(kept_.size(), ProxiedExchange::kMaxKept);
  char c;
  EXPECT_TRUE(run_until([&] { return ::recv(up, &c, 1, MSG_DONTWAIT) == 0; })); // closed
  while (kept_.pop_front()) {
  }
}

} // namespace
} // namespace portico::routing
