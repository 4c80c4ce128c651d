// The backend master's admin listener: request line parsing, and a server driven by hand
// through poll() the way the master's loop drives it: answers, errors, slow clients dropped.
#include "admin_server.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace portico::backend {
namespace {

TEST(ParseAdminRequest, RequestLine) {
  AdminRequest r;
  EXPECT_EQ(parse_admin_request("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &r), 0);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/metrics");
  EXPECT_EQ(parse_admin_request("HEAD /healthz?x=1 HTTP/1.0\n\n", &r), 0);
  EXPECT_EQ(r.method, "HEAD");
  EXPECT_EQ(r.path, "/healthz");
  EXPECT_EQ(parse_admin_request("POST /metrics HTTP/1.1\r\n\r\n", &r), 0); // 405 comes later
  EXPECT_EQ(parse_admin_request("GET /metrics HTTP/2.0\r\n\r\n", &r), 505);
  EXPECT_EQ(parse_admin_request("GET /metrics\r\n\r\n", &r), 400);
  EXPECT_EQ(parse_admin_request("GET  /metrics HTTP/1.1\r\n\r\n", &r), 400);
  EXPECT_EQ(parse_admin_request("GET http://h/metrics HTTP/1.1\r\n\r\n", &r), 400);
  EXPECT_EQ(parse_admin_request("G(T /metrics HTTP/1.1\r\n\r\n", &r), 400);
  EXPECT_EQ(parse_admin_request("GET /met\x01rics HTTP/1.1\r\n\r\n", &r), 400);
  EXPECT_EQ(parse_admin_request("GET /metrics XTTP/1.1\r\n\r\n", &r), 400);
  EXPECT_EQ(parse_admin_request("", &r), 400);
}

class AdminServerTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/portico-admin-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/admin.sock";
    std::string error;
    ASSERT_TRUE(server_.listen("unix:" + path_, &error)) << error;
  }
  void TearDown() override {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }

  int connect_client() {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path_.copy(a.sun_path, sizeof a.sun_path - 1);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
  }
  // One turn of the master's loop at time now.
  void turn(double now, int timeout_ms = 50) {
    std::vector<pollfd> fds;
    server_.add_pollfds(fds);
    ::poll(fds.data(), fds.size(), timeout_ms);
    server_.on_poll(fds.data(), now);
  }
  // Everything the server sends until it closes, turning the loop meanwhile.
  std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    for (int i = 0; i < 200; ++i) {
      turn(0, 5);
      ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0)
        break;
      if (n > 0)
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  std::string request(const std::string& text) {
    int fd = connect_client();
    EXPECT_EQ(::send(fd, text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
    std::string out = read_all(fd);
    ::close(fd);
    return out;
  }

  std::string dir_, path_;
  std::string last_path_;
  AdminServer server_{[this](std::string_view path) {
    last_path_ = path;
    if (path == "/healthz")
      return AdminResponse{200, "text/plain", "ok\n"};
    return AdminResponse{404, "text/plain", "not found\n"};
  }};
};

TEST_F(AdminServerTest, AnswersAndCloses) {
  std::string out = request("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
                 "Connection: close\r\n\r\nok\n");
  EXPECT_EQ(last_path_, "/healthz");
  turn(0); // lingering until the client's close
  EXPECT_EQ(server_.client_count(), 0u);
}

TEST_F(AdminServerTest, HeadHasNoBody) {
  std::string out = request("HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(out.starts_with("HTTP/1.1 200 OK\r\n")) << out;
  EXPECT_NE(out.find("Content-Length: 3\r\n"), std::string::npos);
  EXPECT_TRUE(out.ends_with("\r\n\r\n")) << out;
}

TEST_F(AdminServerTest, Errors) {
  EXPECT_TRUE(request("GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 "));
  std::string post = request("POST /healthz HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_TRUE(post.starts_with("HTTP/1.1 405 ")) << post;
  EXPECT_NE(post.find("Allow: GET, HEAD\r\n"), std::string::npos);
  EXPECT_TRUE(request("garbage\r\n\r\n").starts_with("HTTP/1.1 400 "));
  std::string big = "GET /healthz HTTP/1.1\r\nX: " + std::string(AdminServer::kMaxHead, 'x');
  EXPECT_TRUE(request(big).starts_with("HTTP/1.1 431 "));
}

TEST_F(AdminServerTest, SlowClientIsDroppedAtItsDeadline) {
  int fd = connect_client();
  ASSERT_EQ(::send(fd, "GET /hea", 8, 0), 8);
  turn(100); // accepted at t=100
  turn(100);
  EXPECT_EQ(server_.client_count(), 1u);
  EXPECT_GT(server_.timeout_ms(100), 0);
  turn(100 + AdminServer::kTimeout - 0.5, 0);
  EXPECT_EQ(server_.client_count(), 1u);
  turn(100 + AdminServer::kTimeout, 0);
  EXPECT_EQ(server_.client_count(), 0u);
  EXPECT_EQ(server_.timeout_ms(200), -1);
  char c;
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0); // closed without an answer
  ::close(fd);
}

TEST_F(AdminServerTest, ClientsBeyondTheLimitAreRefused) {
  std::vector<int> idle;
  for (size_t i = 0; i < AdminServer::kMaxClients; ++i)
    idle.push_back(connect_client());
  for (int i = 0; i < 10 && server_.client_count() < AdminServer::kMaxClients; ++i)
    turn(0);
  ASSERT_EQ(server_.client_count(), AdminServer::kMaxClients);
  int extra = connect_client();
  turn(0);
  char c;
  EXPECT_EQ(::recv(extra, &c, 1, 0), 0);
  EXPECT_EQ(server_.client_count(), AdminServer::kMaxClients);
  ::close(extra);
  for (int fd : idle)
    ::close(fd);
}

} // namespace
} // namespace portico::backend
