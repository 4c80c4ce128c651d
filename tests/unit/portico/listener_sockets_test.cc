#include "portico/listener_sockets.h"

#include "config/config_loader.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cstdlib>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::proxy {
namespace {

config::Config parse(const std::string& text) {
  std::vector<std::string> errors;
  auto c = config::parse_config(text, "l.toml", &errors);
  EXPECT_TRUE(c) << (errors.empty() ? "" : errors.front());
  return c ? *c : config::Config{};
}

std::string config_on(const std::string& listeners) {
  return listeners + "[admin]\nenabled = false\n[[cluster]]\nname = \"a\"\n"
                     "endpoints = [\"127.0.0.1:9\"]\n[[route]]\ncluster = \"a\"\n";
}

// A listening TCP socket on a port the kernel picks: (fd, port).
std::pair<int, int> listening_socket() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return {fd, ntohs(a.sin_port)};
}

bool is_open(int fd) {
  return ::fcntl(fd, F_GETFD) >= 0;
}

TEST(ListenerSockets, TcpGetsASocketPerWorkerAndKeepsThemAcrossConfigurations) {
  auto [probe, port] = listening_socket();
  ::close(probe); // a free port
  std::string address = "127.0.0.1:" + std::to_string(port);
  config::Config cfg = parse(config_on("[[listener]]\naddress = \"" + address + "\"\n"));
  ListenerSockets sockets;
  ASSERT_TRUE(sockets.open_for(cfg, 3));
  const auto& a = cfg.listeners[0].address;
  std::vector<int> all;
  for (int w = 0; w < 3; ++w) {
    auto fds = sockets.for_worker(a, w, 3);
    ASSERT_EQ(fds.size(), 1u);
    all.push_back(fds[0]);
  }
  EXPECT_EQ(sockets.all_fds().size(), 3u);
  // Fewer workers later (an upgraded process): every socket still has one, none closes.
  EXPECT_EQ(sockets.for_worker(a, 0, 2), (std::vector<int>{all[0], all[2]}));
  EXPECT_EQ(sockets.for_worker(a, 1, 2), (std::vector<int>{all[1]}));
  ASSERT_TRUE(sockets.open_for(cfg, 3)); // nothing more to open
  EXPECT_EQ(sockets.all_fds().size(), 3u);
  // A configuration without the listener: its sockets close.
  auto [other_fd, other_port] = listening_socket();
  ::close(other_fd);
  config::Config next = parse(
      config_on("[[listener]]\naddress = \"127.0.0.1:" + std::to_string(other_port) + "\"\n"));
  ASSERT_TRUE(sockets.open_for(next, 3));
  sockets.close_unused(next);
  for (int fd : all)
    EXPECT_FALSE(is_open(fd));
  EXPECT_EQ(sockets.all_fds().size(), 3u);
}

TEST(ListenerSockets, AnUpgradedProcessTakesTheSocketsFromItsEnvironment) {
  auto [fd, port] = listening_socket();
  std::string key = "tcp:127.0.0.1:" + std::to_string(port);
  ::setenv("PORTICO_LISTEN_FDS", (key + " " + std::to_string(fd) + "\n").c_str(), 1);
  ListenerSockets sockets;
  ASSERT_TRUE(sockets.inherit_from_environment());
  EXPECT_EQ(std::getenv("PORTICO_LISTEN_FDS"), nullptr); // not passed on further
  config::Config cfg =
      parse(config_on("[[listener]]\naddress = \"127.0.0.1:" + std::to_string(port) + "\"\n"));
  ASSERT_TRUE(sockets.open_for(cfg, 1)); // binding again would fail: the port is taken
  EXPECT_EQ(sockets.for_worker(cfg.listeners[0].address, 0, 1), (std::vector<int>{fd}));
  EXPECT_EQ(sockets.environment_value(), key + " " + std::to_string(fd) + "\n");
}

TEST(ListenerSockets, WhatIsNotAListeningSocketIsRefused) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::setenv("PORTICO_LISTEN_FDS", ("tcp:127.0.0.1:1 " + std::to_string(pipe_fds[0])).c_str(), 1);
  ListenerSockets sockets;
  auto r = sockets.inherit_from_environment();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("is not a listening socket"), std::string::npos) << r.error();
  ::setenv("PORTICO_LISTEN_FDS", "no-fds-here", 1);
  EXPECT_FALSE(ListenerSockets().inherit_from_environment());
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST(ListenerSockets, AFailedOpenLeavesNothingHalfOpened) {
  auto [taken, port] = listening_socket(); // held without SO_REUSEPORT: binding it fails
  auto [probe, free_port] = listening_socket();
  ::close(probe);
  config::Config cfg =
      parse(config_on("[[listener]]\naddress = \"127.0.0.1:" + std::to_string(free_port) +
                      "\"\n[[listener]]\naddress = \"127.0.0.1:" + std::to_string(port) + "\"\n"));
  ListenerSockets sockets;
  EXPECT_FALSE(sockets.open_for(cfg, 1));
  EXPECT_TRUE(sockets.all_fds().empty());
  ::close(taken);
}

} // namespace
} // namespace portico::proxy
