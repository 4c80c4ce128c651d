#pragma once
// HTTP/1.1 keep-alive connections to one endpoint, each carrying one exchange at a time: the
// idle ones are reused newest first and retired before the upstream's own idle timeout (as
// the upstream advertises it, or as it is learned from the upstream's closes).
#include "core/intrusive_list.h"
#include "upstream/connection_pool.h"
#include "upstream/http1_upstream_connection.h"

#include <ev.h>

namespace portico::upstream {

class UpstreamPool;

class Http1ConnectionPool final : public ConnectionPool {
public:
  explicit Http1ConnectionPool(UpstreamPool& owner);
  ~Http1ConnectionPool() override;
  Http1ConnectionPool(const Http1ConnectionPool&) = delete;
  Http1ConnectionPool& operator=(const Http1ConnectionPool&) = delete;

  // ConnectionPool.
  bool reuse(UpstreamStreamListener* listener, bool fresh) override;
  void open(int fd, bool connected, UpstreamStreamListener* listener) override;
  bool close_one_idle() override;
  void close_all() override;
  size_t connections() const override { return open_; }
  size_t idle() const override { return idle_count_; }
  size_t in_flight() const override { return open_ - idle_count_; }

  UpstreamPool& owner() const { return owner_; }

  // From Http1UpstreamConnection: its exchange is over (reusable: it may carry another;
  // keepalive_hint: the upstream's advertised idle timeout, 0 for none).
  void release(Http1UpstreamConnection* u, bool reusable, double keepalive_hint);
  // Its socket is closed: the object is disposed of after this callback.
  void on_closed(Http1UpstreamConnection* u);
  // An idle connection was closed by the upstream after this many seconds idle: retire the
  // others before that from now on, rather than race the upstream's next close.
  void note_idle_closed(double idle_seconds);
  double learned_idle() const { return learned_idle_; }

private:
  static void idle_timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void on_idle_timer();
  void retire_by(double until); // the idle timer fires at until at the latest
  void hand_to(Http1UpstreamConnection* u, UpstreamStreamListener* listener);
  void push_idle(Http1UpstreamConnection* u);
  void unlink_idle(Http1UpstreamConnection* u);
  double retire_after(double keepalive_hint) const;

  UpstreamPool& owner_;
  using IdleList =
      core::IntrusiveList<Http1UpstreamConnection, &Http1UpstreamConnection::idle_hook>;
  IdleList idle_; // newest first
  size_t idle_count_ = 0;
  size_t open_ = 0;
  double learned_idle_ = 0; // shortest idle time after which the upstream closed, 0: none seen
  ev_timer idle_timer_;
};

} // namespace portico::upstream
