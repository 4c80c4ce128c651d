// UpstreamPool with a fake of its small interface (UpstreamStreamListener) on a real loop and a
// unix socket nobody accepts from (a connect lands in its backlog): the per-worker connection
// limit queues the excess, a queued request leaves on cancel or at queue_timeout, a connection
// that closes serves the next in line, a refused connect holds the endpoint down, and running
// out of descriptors is the proxy's own shortage (503) that holds nothing down; an h2c
// connection the upstream drains counts none of its streams once they end; a whole HTTP/1.1
// request leaves at once, its buffer back in the pool.
#include "core/block_pool.h"
#include "core/deferred_queue.h"
#include "http/request_head.h"
#include "loop_until.h"
#include "metrics/worker_metrics.h"
#include "upstream/upstream_pool.h"
#include "upstream/upstream_stream.h"

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <ev.h>
#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace portico::upstream {
namespace {

struct FakeRequest final : UpstreamStreamListener {
  UpstreamStream* up = nullptr;
  int ready = 0, queue_timeouts = 0, ended = 0;
  bool send_get = false; // send a bodiless GET once ready
  std::vector<std::pair<UpstreamError, Delivery>> errors;

  void on_upstream_ready(UpstreamStream& u) override {
    up = &u;
    ++ready;
    if (send_get) {
      http::RequestHead req;
      req.method = "GET";
      req.target = "/";
      req.authority = "app";
      u.send_head(req, BodyFraming::NONE, ClientOrigin{}, ForwardingOptions{});
      u.end_request({});
    }
  }
  void on_upstream_head(const http::UpstreamResponseHead&) override {}
  void on_upstream_body(std::string_view) override {}
  void on_upstream_end() override {
    up = nullptr;
    ++ended;
  }
  void on_upstream_error(UpstreamError e, Delivery d) override {
    up = nullptr;
    errors.push_back({e, d});
  }
  void on_queue_timeout() override { ++queue_timeouts; }
};

class UpstreamPoolTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/portico-pool-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    loop_ = ev_loop_new(EVFLAG_AUTO);
    deferred_ = std::make_unique<core::DeferredQueue>(loop_);
    cluster_.name = "app";
    cluster_.max_connections = 1;
    cluster_.queue_timeout = 0.05;
  }
  void TearDown() override {
    pool_.reset();
    deferred_->run();
    deferred_.reset();
    ev_loop_destroy(loop_);
    if (listen_fd_ >= 0)
      ::close(listen_fd_);
    ::unlink((dir_ + "/s").c_str());
    ::rmdir(dir_.c_str());
  }
  // A pool of one connection per worker to a unix socket, listening or not.
  void make_pool(bool listening) {
    std::string path = dir_ + "/s";
    if (listening) {
      listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un sa{};
      sa.sun_family = AF_UNIX;
      std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
      ASSERT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
      ASSERT_EQ(::listen(listen_fd_, 16), 0);
    }
    cluster_.endpoints = {"unix:" + path};
    auto spec = core::parse_endpoint(cluster_.endpoints[0]);
    ASSERT_TRUE(spec);
    metrics_ = std::make_unique<metrics::ClusterMetrics>(&bounds_, 1);
    pool_ = std::make_unique<UpstreamPool>(loop_, *deferred_, *spec, cluster_, 1, *metrics_,
                                           metrics_->endpoints[0]);
  }
  // Runs the loop until done() or a second has passed (loop_until.h).
  template <typename F> void run_until(F done) { unit::run_loop_until(loop_, done, 1); }

  // Accepts the pool's connection and reads from it until seen(fd, what it read) says enough
  // came; returns its descriptor, or -1 when a second passed first.
  int accept_once(bool (*seen)(int, std::string&)) {
    int server = -1;
    std::string in;
    run_until([&] {
      if (server < 0)
        server = ::accept(listen_fd_, nullptr, nullptr);
      return server >= 0 && seen(server, in);
    });
    return server;
  }

  std::string dir_;
  int listen_fd_ = -1;
  struct ev_loop* loop_ = nullptr;
  std::unique_ptr<core::DeferredQueue> deferred_;
  config::ClusterConfig cluster_;
  std::vector<double> bounds_;
  std::unique_ptr<metrics::ClusterMetrics> metrics_;
  std::unique_ptr<UpstreamPool> pool_;
};

TEST_F(UpstreamPoolTest, TheLimitQueuesTheExcessAndCancelLeavesTheQueue) {
  make_pool(true);
  FakeRequest a, b;
  pool_->acquire(&a, false);
  EXPECT_EQ(a.ready, 1);
  pool_->acquire(&b, false);
  EXPECT_EQ(b.ready, 0);
  EXPECT_EQ(pool_->waiting(), 1u);
  EXPECT_EQ(metrics_->endpoints[0].waiting.get(), 1);
  pool_->cancel(&b);
  EXPECT_EQ(pool_->waiting(), 0u);
  a.up->detach();
  deferred_->run();
}

TEST_F(UpstreamPoolTest, AClosedConnectionServesTheNextInLine) {
  make_pool(true);
  FakeRequest a, b, c;
  pool_->acquire(&a, false);
  pool_->acquire(&b, false);
  pool_->acquire(&c, false);
  EXPECT_EQ(pool_->waiting(), 2u);
  a.up->detach(); // closes it: room for the first waiter, in order
  run_until([&] { return b.ready > 0; });
  EXPECT_EQ(b.ready, 1);
  EXPECT_EQ(c.ready, 0);
  EXPECT_EQ(pool_->waiting(), 1u);
  pool_->cancel(&c);
  b.up->detach();
  deferred_->run();
}

TEST_F(UpstreamPoolTest, AQueuedRequestTimesOut) {
  make_pool(true);
  FakeRequest a, b;
  pool_->acquire(&a, false);
  pool_->acquire(&b, false);
  run_until([&] { return b.queue_timeouts > 0; });
  EXPECT_EQ(b.queue_timeouts, 1);
  EXPECT_EQ(b.ready, 0);
  EXPECT_EQ(pool_->waiting(), 0u);
  EXPECT_EQ(metrics_->errors.queue_timeout().get(), 1u);
  a.up->detach();
  deferred_->run();
}

TEST_F(UpstreamPoolTest, ARefusedConnectHoldsTheEndpointDown) {
  make_pool(false); // nothing listens on the path
  FakeRequest a;
  pool_->acquire(&a, false);
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_EQ(a.errors[0].first, UpstreamError::CONNECT_REFUSED);
  EXPECT_EQ(a.errors[0].second, Delivery::NOT_DELIVERED);
  EXPECT_EQ(metrics_->endpoints[0].connect_failures.get(), 1);
}

// The highest open descriptor number, plus one.
int fd_ceiling() {
  int top = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d))
      top = std::max(top, std::atoi(e->d_name) + 1);
    ::closedir(d);
  }
  return top;
}

TEST_F(UpstreamPoolTest, OutOfDescriptorsIsLocalAndHoldsNothingDown) {
  make_pool(true);
  {
    // Once with descriptors to spare: UBSan's vptr check of a type it has not met yet probes
    // memory through a pipe(), which the window below would make fail.
    FakeRequest warm;
    pool_->acquire(&warm, false);
    warm.up->detach();
    deferred_->run();
  }
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(fd_ceiling());
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  std::vector<int> fillers; // the holes below the limit: every descriptor number taken
  for (int fd; (fd = ::dup(0)) >= 0;)
    fillers.push_back(fd);
  FakeRequest a;
  pool_->acquire(&a, false);
  for (int fd : fillers)
    ::close(fd);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_EQ(a.errors[0].first, UpstreamError::LOCAL_RESOURCES);
  EXPECT_EQ(metrics_->endpoints[0].connect_failures.get(), 0);
  EXPECT_EQ(metrics_->errors.local_resources().get(), 1u);
  FakeRequest b; // and the endpoint serves the next request
  pool_->acquire(&b, false);
  EXPECT_EQ(b.ready, 1);
  b.up->detach();
  deferred_->run();
}

// Reads from fd (non-blocking) until a HEADERS frame has arrived after the client preface.
bool saw_headers(int fd, std::string& in) {
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0;)
    in.append(buf, static_cast<size_t>(n));
  for (size_t at = 24; at + 9 <= in.size();) {
    size_t len = (static_cast<uint8_t>(in[at]) << 16) | (static_cast<uint8_t>(in[at + 1]) << 8) |
                 static_cast<uint8_t>(in[at + 2]);
    if (in[at + 3] == 0x01)
      return true;
    at += 9 + len;
  }
  return false;
}

// Reads what the upstream has been sent: true once it holds a whole HTTP/1.1 request head.
bool saw_head(int fd, std::string& in) {
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0;)
    in.append(buf, static_cast<size_t>(n));
  return in.find("\r\n\r\n") != std::string::npos;
}

TEST_F(UpstreamPoolTest, AWholeRequestIsWrittenAtOnceAndItsBlockGivenBack) {
  // Not at the end of the loop pass, with the deferred flushes: a pass through thousands of
  // busy connections would hold a block for each until then (the peak RSS of 8,000 clients).
  make_pool(true);
  FakeRequest a, b;
  a.send_get = b.send_get = true;
  pool_->acquire(&a, false);
  int server = accept_once(saw_head);
  ASSERT_GE(server, 0);
  const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  ASSERT_EQ(::send(server, ok, sizeof ok - 1, 0), static_cast<ssize_t>(sizeof ok - 1));
  run_until([&] { return a.ended > 0; });
  ASSERT_EQ(a.ended, 1);
  deferred_->run();

  int64_t blocks = core::BlockPool::local().in_use();
  pool_->acquire(&b, false); // the idle connection: its GET goes out before this returns
  ASSERT_EQ(b.ready, 1);
  EXPECT_EQ(core::BlockPool::local().in_use(), blocks);
  char buf[512];
  ssize_t n = ::recv(server, buf, sizeof buf, MSG_DONTWAIT);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)).rfind("GET / HTTP/1.1\r\n", 0), 0u);
  b.up->detach();
  deferred_->run();
  ::close(server);
}

TEST_F(UpstreamPoolTest, AConnectionToAUnixSocketWritesItsFirstRequestAtOnce) {
  // connect(2) to a unix socket is done when it returns (the backlog took it): the connection
  // waits for no writability, so that a burst of new clients does not leave a block holding
  // each request head until the next loop pass.
  make_pool(true);
  FakeRequest a;
  a.send_get = true;
  int64_t blocks = core::BlockPool::local().in_use();
  pool_->acquire(&a, false);
  ASSERT_EQ(a.ready, 1);
  EXPECT_EQ(core::BlockPool::local().in_use(), blocks);
  int server = ::accept(listen_fd_, nullptr, nullptr);
  ASSERT_GE(server, 0);
  char buf[512];
  ssize_t n = ::recv(server, buf, sizeof buf, MSG_DONTWAIT);
  ASSERT_GT(n, 0) << "the request was not written when acquire returned";
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)).rfind("GET / HTTP/1.1\r\n", 0), 0u);
  const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  ASSERT_EQ(::send(server, ok, sizeof ok - 1, 0), static_cast<ssize_t>(sizeof ok - 1));
  run_until([&] { return a.ended > 0; });
  EXPECT_EQ(a.ended, 1);
  deferred_->run();
  ::close(server);
}

TEST_F(UpstreamPoolTest, AConnectionWhoseRequestWriteFailedIsNotPooled) {
  // The upstream stops reading (here shutdown(SHUT_RD): the write gets EPIPE) yet answers in
  // full with keep-alive. The answer is passed on, but the connection cannot carry another
  // request: pooled (newest first), it was handed the next request, whose write failed on it.
  std::signal(SIGPIPE, SIG_IGN); // as the servers do
  make_pool(true);
  FakeRequest a;
  pool_->acquire(&a, false);
  ASSERT_EQ(a.ready, 1);
  http::RequestHead req;
  req.method = "POST";
  req.target = "/";
  req.authority = "app";
  req.content_length = 4;
  a.up->send_head(req, BodyFraming::CONTENT_LENGTH, ClientOrigin{}, ForwardingOptions{});
  deferred_->run();
  int server = accept_once(saw_head);
  ASSERT_GE(server, 0);
  ASSERT_EQ(::shutdown(server, SHUT_RD), 0);
  const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  ASSERT_EQ(::send(server, ok, sizeof ok - 1, 0), static_cast<ssize_t>(sizeof ok - 1));
  a.up->send_body("body");
  a.up->end_request({}); // its write fails: EPIPE
  deferred_->run();      // the flush meets EPIPE again, and reads the answer
  EXPECT_EQ(a.ended, 1);
  EXPECT_TRUE(a.errors.empty());
  EXPECT_EQ(pool_->connections().idle(), 0u) << "a connection that cannot be written was pooled";
  EXPECT_EQ(pool_->connections().connections(), 0u);
  ::close(server);
}

TEST_F(UpstreamPoolTest, AnH2cConnectionDrainedByGoawayLeavesNoStreamCounted) {
  cluster_.protocol = config::UpstreamProtocol::H2C;
  make_pool(true);
  FakeRequest a;
  a.send_get = true;
  pool_->acquire(&a, false);
  ASSERT_EQ(a.ready, 1);
  EXPECT_EQ(pool_->load(), 1u);
  int server = accept_once(saw_headers);
  ASSERT_GE(server, 0);
  // SETTINGS, ACK of the client's, GOAWAY naming stream 1 as the last it takes, then stream
  // 1's answer (:status 200 from HPACK's static table) ending the stream.
  const unsigned char frames[] = {0, 0, 0, 4, 0, 0, 0, 0, 0,                           //
                                  0, 0, 0, 4, 1, 0, 0, 0, 0,                           //
                                  0, 0, 8, 7, 0, 0, 0, 0, 0, 0,   0, 0, 1, 0, 0, 0, 0, //
                                  0, 0, 1, 1, 5, 0, 0, 0, 1, 0x88};
  ASSERT_EQ(::send(server, frames, sizeof frames, 0), static_cast<ssize_t>(sizeof frames));
  run_until([&] { return a.ended > 0 && pool_->connections().connections() == 0; });
  EXPECT_EQ(a.ended, 1);
  EXPECT_EQ(pool_->connections().connections(), 0u); // drained and closed
  // The stream that ended on the draining connection is no longer counted: balancing would
  // pass this endpoint over for ever.
  EXPECT_EQ(pool_->load(), 0u);
  ::close(server);
}

TEST_F(UpstreamPoolTest, AnH2cShareBelowH2ConnectionsStillMultiplexes) {
  // h2_connections = 2 asks for requests to spread over two connections, but this worker may
  // open only one: the second request must take a stream on it, not wait for the first.
  cluster_.protocol = config::UpstreamProtocol::H2C;
  cluster_.h2_connections = 2;
  make_pool(true);
  FakeRequest a, b;
  pool_->acquire(&a, false);
  ASSERT_EQ(a.ready, 1);
  pool_->acquire(&b, false);
  EXPECT_EQ(b.ready, 1);
  EXPECT_EQ(pool_->waiting(), 0u);
  EXPECT_EQ(pool_->connections().connections(), 1u);
  a.up->detach();
  b.up->detach();
  deferred_->run();
}

} // namespace
} // namespace portico::upstream
