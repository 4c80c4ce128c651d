#pragma once
// Accepts connections on one listening socket for one worker. Several processes or threads
// may share the socket: the socket sits in a private epoll set with EPOLLEXCLUSIVE, so a new
// connection wakes one worker rather than all of them.
#include <cstdint>
#include <ev.h>
#include <openssl/ssl.h>

namespace portico::server {

class ServerContext;

class Acceptor {
public:
  // tls: connections on this socket speak TLS with this context (null: cleartext).
  // listener: which configured listener this is, passed on to each exchange.
  Acceptor(ServerContext& ctx, int listen_fd, SSL_CTX* tls = nullptr, uint16_t listener = 0);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  bool ok() const { return epfd_ >= 0; }
  void start();
  void stop();

private:
  static void io_cb(struct ev_loop* loop, ev_io* w, int revents);
  void on_ready();

  ServerContext& ctx_;
  int lfd_;
  SSL_CTX* tls_;
  uint16_t listener_;
  int epfd_ = -1;
  ev_io io_;
};

} // namespace portico::server
