#pragma once
// Accepts connections on one listening socket for one worker. Several processes or threads
// may share the socket: the socket sits in a private epoll set with EPOLLEXCLUSIVE, so that a new
// connection wakes one worker rather than all of them. At a connection limit accepting pauses
// (the kernel's backlog holds the rest) until a connection closes; when the process is out of
// file descriptors it pauses with a growing backoff instead of spinning on a level-triggered
// socket it cannot serve. With an AcceptShare (server/accept_share.h) it leaves a connection to
// the sharer holding the fewest for a moment; one that took none meanwhile is passed over.
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
  // Whether this one takes the next connection. False: it left the queued one to a sharer
  // holding fewer (and looks again in a moment), or none is queued.
  bool may_take();
  bool connection_queued() const;
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
  int waited_for_ = -1;        // the sharer this one leaves the queued connection to
  uint64_t accepted_seen_ = 0; // its accepted_by() when the wait began
  ev_tstamp waiting_since_ = 0;
  ev_tstamp window_start_ = 0; // accepts counted since, to tell churn from a burst
  int window_accepts_ = 0;
  ev_tstamp churn_until_ = 0; // taking without asking until then
};

} // namespace portico::server
