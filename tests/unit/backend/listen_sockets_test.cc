// open_listen_sockets and inherit_server_starter_sockets: the sockets, or an error naming the
// address or SERVER_STARTER_PORT entry at fault. Unix sockets live in a fresh temporary
// directory; a busy TCP address is one this test holds listening on loopback.
#include "listen_sockets.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fcntl.h>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace portico::backend {
namespace {

class ListenSockets : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/portico-listen-sockets-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (int fd : fds_)
      ::close(fd);
    for (const auto& p : paths_)
      ::unlink(p.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string unix_path(const char* name) {
    paths_.push_back(dir_ + "/" + name);
    return paths_.back();
  }
  // A TCP socket listening on a loopback port of the kernel's choice: "127.0.0.1:PORT" is busy.
  std::string busy_address() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(fd, 0);
    fds_.push_back(fd);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    EXPECT_EQ(::listen(fd, 1), 0);
    EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
    return "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  }
  void keep(const std::vector<ListenSocket>& sockets) {
    for (const auto& s : sockets)
      fds_.push_back(s.fd);
  }
  static bool exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }
  std::string dir_;
  std::vector<std::string> paths_;
  std::vector<int> fds_;
};

TEST_F(ListenSockets, OpensEveryAddress) {
  std::string a = unix_path("a.sock"), b = unix_path("b.sock");
  auto s = open_listen_sockets({"unix:" + a, "unix:" + b + ":0600"});
  ASSERT_TRUE(s.has_value()) << s.error();
  keep(*s);
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].name, "unix:" + a);
  EXPECT_EQ((*s)[0].unix_path, a);
  EXPECT_EQ((*s)[1].unix_path, b);
  for (const auto& l : *s) {
    int type = 0;
    socklen_t len = sizeof type;
    EXPECT_EQ(::getsockopt(l.fd, SOL_SOCKET, SO_TYPE, &type, &len), 0);
    EXPECT_EQ(type, SOCK_STREAM);
  }
}

TEST_F(ListenSockets, MalformedAddressIsNamed) {
  auto s = open_listen_sockets({"nowhere"});
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().find("'nowhere'"), std::string::npos) << s.error();
}

TEST_F(ListenSockets, BusyAddressIsNamed) {
  std::string busy = busy_address();
  auto s = open_listen_sockets({busy});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error(), "bind " + busy + ": Address already in use");
}

TEST_F(ListenSockets, LiveUnixSocketIsNamed) {
  std::string a = unix_path("a.sock");
  auto first = open_listen_sockets({"unix:" + a});
  ASSERT_TRUE(first.has_value()) << first.error();
  keep(*first);
  auto second = open_listen_sockets({"unix:" + a});
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error(), a + ": another server is listening there");
}

TEST_F(ListenSockets, AFailureClosesWhatWasAlreadyBound) {
  // The caller gets only the error, so the socket bound for the first address must not linger.
  std::string a = unix_path("a.sock");
  std::string busy = busy_address();
  auto s = open_listen_sockets({"unix:" + a, busy});
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().find(busy), std::string::npos) << s.error();
  EXPECT_FALSE(exists(a));
  // Nothing holds the path either: it binds again.
  auto again = open_listen_sockets({"unix:" + a});
  ASSERT_TRUE(again.has_value()) << again.error();
  keep(*again);
}

TEST_F(ListenSockets, InheritsServerStarterSockets) {
  int a = ::socket(AF_INET, SOCK_STREAM, 0), b = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  fds_.push_back(a);
  fds_.push_back(b);
  std::string env = "127.0.0.1:8080=" + std::to_string(a) + ";;/tmp/app.sock=" + std::to_string(b);
  auto s = inherit_server_starter_sockets(env.c_str());
  ASSERT_TRUE(s.has_value()) << s.error();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].name, "127.0.0.1:8080");
  EXPECT_EQ((*s)[0].fd, a);
  EXPECT_EQ((*s)[1].name, "/tmp/app.sock");
  EXPECT_EQ((*s)[1].fd, b);
  // Inherited: start_server owns the path, we never remove it.
  EXPECT_TRUE((*s)[1].unix_path.empty());
  EXPECT_NE(::fcntl(a, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(::fcntl(a, F_GETFD) & FD_CLOEXEC, 0);
}

TEST_F(ListenSockets, MalformedServerStarterEntryIsNamed) {
  for (const char* bad :
       {"127.0.0.1:8080", "127.0.0.1:8080=", "127.0.0.1:8080=x3", "127.0.0.1:8080=-1"}) {
    auto s = inherit_server_starter_sockets(bad);
    ASSERT_FALSE(s.has_value()) << bad;
    EXPECT_EQ(s.error(), std::string("malformed SERVER_STARTER_PORT entry: ") + bad);
  }
}

TEST_F(ListenSockets, ServerStarterFdThatIsNoStreamSocket) {
  int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  int p[2];
  ASSERT_GE(udp, 0);
  ASSERT_EQ(::pipe(p), 0);
  fds_.insert(fds_.end(), {udp, p[0], p[1]});
  for (int fd : {udp, p[0]}) {
    auto s = inherit_server_starter_sockets(("x:1=" + std::to_string(fd)).c_str());
    ASSERT_FALSE(s.has_value()) << fd;
    EXPECT_EQ(s.error(),
              "SERVER_STARTER_PORT fd " + std::to_string(fd) + " is not a stream socket");
  }
}

TEST_F(ListenSockets, ServerStarterNamingNoSocket) {
  for (const char* empty : {"", ";", ";;"}) {
    auto s = inherit_server_starter_sockets(empty);
    ASSERT_FALSE(s.has_value()) << "'" << empty << "'";
    EXPECT_EQ(s.error(), "SERVER_STARTER_PORT names no socket");
  }
}

} // namespace
} // namespace portico::backend
