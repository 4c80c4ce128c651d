// parse_listen_address and open_listener. The unix socket tests work in a fresh temporary
// directory; TCP listeners bind port 0 on loopback.
#include "core/listen_address.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace portico::core {
namespace {

ListenAddress parse_ok(std::string_view s) {
  auto a = parse_listen_address(s);
  EXPECT_TRUE(a.has_value()) << s << ": " << (a ? "" : a.error());
  return a.value_or(ListenAddress{});
}

TEST(ParseListenAddress, UnixPath) {
  ListenAddress a = parse_ok("unix:/run/portico/app.sock");
  EXPECT_EQ(a.kind, ListenAddress::Kind::UNIX);
  EXPECT_EQ(a.path, "/run/portico/app.sock");
  EXPECT_EQ(a.mode, -1);
  EXPECT_EQ(a.text, "unix:/run/portico/app.sock");
}

TEST(ParseListenAddress, UnixPathWithMode) {
  ListenAddress a = parse_ok("unix:/tmp/app.sock:0666");
  EXPECT_EQ(a.kind, ListenAddress::Kind::UNIX);
  EXPECT_EQ(a.path, "/tmp/app.sock");
  EXPECT_EQ(a.mode, 0666);
  EXPECT_EQ(parse_ok("unix:/tmp/a:600").mode, 0600);
  // A suffix that is not an octal mode is part of the path.
  ListenAddress b = parse_ok("unix:/tmp/a:b");
  EXPECT_EQ(b.path, "/tmp/a:b");
  EXPECT_EQ(b.mode, -1);
}

TEST(ParseListenAddress, Tcp) {
  ListenAddress a = parse_ok("127.0.0.1:80");
  EXPECT_EQ(a.kind, ListenAddress::Kind::TCP);
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 80);
  ListenAddress v6 = parse_ok("[::1]:8080");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 8080);
  ListenAddress any = parse_ok("*:80");
  EXPECT_EQ(any.host, "");
  EXPECT_EQ(any.port, 80);
  EXPECT_EQ(parse_ok("localhost:65535").port, 65535);
}

TEST(ParseListenAddress, Errors) {
  for (const char* bad :
       {"", "80", "unix:", "unix:relative.sock", "unix:relative:0666", "127.0.0.1:", "127.0.0.1:0",
        "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:http", "127.0.0.1:80x", "[::1]:99999",
        "[::1:80", "::1]:80", "::1:80", "unix:/tmp/a.sock:7777777", "unix:/tmp/a.sock:177777"}) {
    auto a = parse_listen_address(bad);
    ASSERT_FALSE(a.has_value()) << "'" << bad << "'";
    EXPECT_FALSE(a.error().empty()) << "'" << bad << "'";
  }
}

class OpenUnixListener : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/portico-listen-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/s.sock";
  }
  void TearDown() override {
    for (int fd : fds_)
      ::close(fd);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  int open(std::string_view text, std::string* error) {
    auto a = parse_listen_address(text);
    EXPECT_TRUE(a) << (a ? "" : a.error());
    if (!a)
      return -1;
    auto fd = open_listener(*a, 16, PortSharing::NONE);
    if (!fd) {
      *error = fd.error();
      return -1;
    }
    fds_.push_back(*fd);
    return *fd;
  }
  bool connects() {
    int c = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path_.c_str());
    bool ok = ::connect(c, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    ::close(c);
    return ok;
  }
  std::string dir_, path_;
  std::vector<int> fds_;
};

TEST_F(OpenUnixListener, ListensWithTheMode) {
  std::string error;
  int fd = open("unix:" + path_ + ":0600", &error);
  ASSERT_GE(fd, 0) << error;
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(connects());
}

TEST_F(OpenUnixListener, ListensWithTheOwner) {
  auto a = parse_listen_address("unix:" + path_ + ":0660");
  ASSERT_TRUE(a);
  // As root the owner really changes; otherwise to this user's own ids, the ones it may give.
  bool root = ::geteuid() == 0;
  a->uid = root ? 65534 : static_cast<int>(::geteuid());
  a->gid = root ? 65534 : static_cast<int>(::getegid());
  auto fd = open_listener(*a, 16, PortSharing::NONE);
  ASSERT_TRUE(fd) << fd.error();
  fds_.push_back(*fd);
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(static_cast<int>(st.st_uid), a->uid);
  EXPECT_EQ(static_cast<int>(st.st_gid), a->gid);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
}

TEST_F(OpenUnixListener, ReplacesAStaleSocketFile) {
  // A server that died leaves its socket file behind with nobody accepting.
  int dead = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path_.c_str());
  ASSERT_EQ(::bind(dead, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ::close(dead);
  ASSERT_FALSE(connects());

  std::string error;
  int fd = open("unix:" + path_, &error);
  ASSERT_GE(fd, 0) << error;
  EXPECT_TRUE(connects());
}

TEST_F(OpenUnixListener, RefusesALiveSocket) {
  std::string error;
  ASSERT_GE(open("unix:" + path_, &error), 0) << error;
  std::string error2;
  EXPECT_EQ(open("unix:" + path_, &error2), -1);
  EXPECT_NE(error2.find("another server"), std::string::npos) << error2;
  // The live server keeps its socket.
  EXPECT_TRUE(connects());
}

TEST_F(OpenUnixListener, LeavesARegularFileAlone) {
  FILE* f = std::fopen(path_.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("data", f);
  std::fclose(f);
  std::string error;
  EXPECT_EQ(open("unix:" + path_, &error), -1);
  EXPECT_FALSE(error.empty());
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, 4);
}

TEST_F(OpenUnixListener, PathTooLong) {
  ListenAddress a;
  a.kind = ListenAddress::Kind::UNIX;
  a.path = "/" + std::string(200, 'p');
  auto fd = open_listener(a, 16, PortSharing::NONE);
  ASSERT_FALSE(fd);
  EXPECT_NE(fd.error().find("too long"), std::string::npos) << fd.error();
}

TEST(OpenTcpListener, BindsLoopback) {
  ListenAddress a;
  a.host = "127.0.0.1";
  a.port = 0; // not accepted by the parser; lets the kernel pick a free port here
  a.text = "127.0.0.1:0";
  auto opened = open_listener(a, 16, PortSharing::NEW_GROUP);
  ASSERT_TRUE(opened) << opened.error();
  int fd = *opened;
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  EXPECT_EQ(sa.sin_family, AF_INET);
  EXPECT_EQ(ntohl(sa.sin_addr.s_addr), INADDR_LOOPBACK);
  EXPECT_NE(sa.sin_port, 0);
  int c = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ::close(c);
  ::close(fd);
}

} // namespace
} // namespace portico::core
