#pragma once
// Accepts connections on one listening socket for one worker. Several processes or threads
// may share the socket: the socket sits in a private epoll set with EPOLLEXCLUSIVE, so a new
// connection wakes one worker rather than all of them. At a connection limit accepting pauses
// (the kernel's backlog holds the rest) until a connection closes; when the process is out of
// file descriptors it pauses with a growing backoff instead of spinning on a level-triggered
// socket it cannot serve. With an AcceptShare (server/accept_share.h) it leaves a connection to
// a sharer holding fewer; when none took it within a moment, it takes it and stops asking for
// a while.
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
  uint16_t listener() const { return listener_; }
  void start();
  void stop();
  // A connection closed: accepting goes on if it was paused at a connection limit.
  void on_room();
  // In a child after fork(): its epoll descriptor closed, nothing else touched.
  void close_fds_after_fork();

private:
  static void io_cb(struct ev_loop* loop, ev_io* w, int revents);
  static void backoff_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void on_ready();
  // Leaves the queued connections to a sharer holding fewer; false when this one should take
  // the next itself.
  bool leave_to_another();
  void back_off(int err);
  // Stops watching the socket; backoff_cb starts again after seconds.
  void pause_for(ev_tstamp seconds);

  ServerContext& ctx_;
  int lfd_;
  SSL_CTX* tls_;
  uint16_t listener_;
  int epfd_ = -1;
  ev_io io_;
  ev_timer backoff_;
  ev_tstamp delay_ = 0; // the current backoff, 0 while accepts succeed
  bool started_ = false;
  bool at_limit_ = false;
  bool yielded_ = false;       // backoff_ is the share's moment, not an error's backoff
  uint64_t accepted_seen_ = 0; // the share's accepted_by_all() when this one yielded
  ev_tstamp share_off_until_ = 0;
};

} // namespace portico::server
