// MemcachedClient against a fake memcached the test plays byte by byte on a loopback socket:
// commands are pipelined and answered in order, NOT_FOUND leads to add, NOT_STORED (another
// worker added it first) to one more incr, a cancelled waiter hears nothing while the order
// of the others holds, and a refused or silent memcached fails what waits, quickly.
#include "memcached_client.h"

#include <arpa/inet.h>
#include <ev.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace portico::backend {
namespace {

struct Waiter final : CounterWaiter {
  std::vector<core::expected<uint64_t, std::string>> got;
  void on_counter(core::expected<uint64_t, std::string> v) override { got.push_back(v); }
};

class MemcachedClientTest : public ::testing::Test {
protected:
  void SetUp() override {
    loop_ = ev_loop_new(EVFLAG_AUTO);
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listen_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ASSERT_EQ(::listen(listen_, 4), 0);
    socklen_t len = sizeof sa;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    client_ = std::make_unique<MemcachedClient>(loop_, "127.0.0.1:" + std::to_string(port_));
  }
  void TearDown() override {
    client_.reset();
    if (server_ >= 0)
      ::close(server_);
    if (listen_ >= 0)
      ::close(listen_);
    ev_loop_destroy(loop_);
  }
  template <typename F> bool run_until(F done, double seconds = 3) {
    ev_tstamp until = ev_time() + seconds;
    while (!done() && ev_time() < until)
      ev_run(loop_, EVRUN_NOWAIT);
    return done();
  }
  // The fake memcached: accepts, then reads until it has `lines` command lines (an add's data
  // line counts as one).
  std::string read_lines(size_t lines) {
    std::string in;
    run_until([&] {
      if (server_ < 0)
        server_ = ::accept4(listen_, nullptr, nullptr, SOCK_NONBLOCK);
      char buf[4096];
      for (ssize_t n; server_ >= 0 && (n = ::recv(server_, buf, sizeof buf, 0)) > 0;)
        in.append(buf, static_cast<size_t>(n));
      size_t count = 0;
      for (size_t at = 0; (at = in.find("\r\n", at)) != std::string::npos; at += 2)
        ++count;
      return count >= lines;
    });
    return in;
  }
  void reply(std::string_view bytes) {
    ASSERT_EQ(::send(server_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  struct ev_loop* loop_ = nullptr;
  int listen_ = -1, server_ = -1;
  uint16_t port_ = 0;
  std::unique_ptr<MemcachedClient> client_;
};

TEST_F(MemcachedClientTest, PipelinedAndAnsweredInOrder) {
  Waiter a, b, c;
  client_->increment("x", &a);
  client_->increment("y", &b);
  client_->increment("x", &c);
  EXPECT_EQ(read_lines(3), "incr counter:x 1\r\nincr counter:y 1\r\nincr counter:x 1\r\n");
  reply("5\r\n9\r\n6\r\n");
  ASSERT_TRUE(run_until([&] { return c.got.size() == 1; }));
  EXPECT_EQ(a.got.at(0).value(), 5u);
  EXPECT_EQ(b.got.at(0).value(), 9u);
  EXPECT_EQ(c.got.at(0).value(), 6u);
}

TEST_F(MemcachedClientTest, AnAbsentCounterIsAddedAndARaceIncrementsAgain) {
  Waiter first, raced;
  client_->increment("new", &first);
  client_->increment("hot", &raced);
  read_lines(2);
  reply("NOT_FOUND\r\nNOT_FOUND\r\n");
  EXPECT_EQ(read_lines(4), "add counter:new 0 0 1\r\n1\r\nadd counter:hot 0 0 1\r\n1\r\n");
  reply("STORED\r\nNOT_STORED\r\n"); // another worker added "hot" in between
  EXPECT_EQ(read_lines(1), "incr counter:hot 1\r\n");
  reply("2\r\n");
  ASSERT_TRUE(run_until([&] { return raced.got.size() == 1; }));
  EXPECT_EQ(first.got.at(0).value(), 1u);
  EXPECT_EQ(raced.got.at(0).value(), 2u);
}

TEST_F(MemcachedClientTest, ACancelledWaiterHearsNothingAndTheOrderHolds) {
  Waiter gone, next;
  client_->increment("a", &gone);
  client_->increment("b", &next);
  read_lines(2);
  client_->cancel(&gone);
  reply("1\r\n7\r\n");
  ASSERT_TRUE(run_until([&] { return next.got.size() == 1; }));
  EXPECT_TRUE(gone.got.empty());
  EXPECT_EQ(next.got.at(0).value(), 7u); // the first reply was gone's, not next's
}

TEST_F(MemcachedClientTest, ASilentMemcachedFailsWithinASecond) {
  Waiter w;
  client_->increment("slow", &w);
  read_lines(1); // read, never answered
  ev_tstamp t0 = ev_time();
  ASSERT_TRUE(run_until([&] { return !w.got.empty(); }));
  EXPECT_LT(ev_time() - t0, 1.5);
  ASSERT_FALSE(w.got.at(0));
  EXPECT_NE(w.got.at(0).error().find("did not answer"), std::string::npos);
  // Passed over for a second: the next request fails at once, without a connect.
  Waiter again;
  client_->increment("slow", &again);
  ASSERT_EQ(again.got.size(), 1u);
  EXPECT_FALSE(again.got.at(0));
}

TEST_F(MemcachedClientTest, ARefusedConnectFails) {
  ::close(listen_);
  listen_ = -1; // nothing listens on the port now
  Waiter w;
  client_->increment("k", &w);
  ASSERT_TRUE(run_until([&] { return !w.got.empty(); }));
  ASSERT_FALSE(w.got.at(0));
  EXPECT_NE(w.got.at(0).error().find("refused"), std::string::npos) << w.got.at(0).error();
}

TEST_F(MemcachedClientTest, AnErrorReplyIsAnError) {
  Waiter w;
  client_->increment("k", &w);
  read_lines(1);
  reply("SERVER_ERROR out of memory\r\n");
  ASSERT_TRUE(run_until([&] { return !w.got.empty(); }));
  ASSERT_FALSE(w.got.at(0));
  EXPECT_EQ(w.got.at(0).error(), "memcached: SERVER_ERROR out of memory");
}

} // namespace
} // namespace portico::backend
