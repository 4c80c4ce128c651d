#pragma once
// One worker thread's connections to one upstream endpoint: the idle ones (reused newest
// first, retired before the upstream's own idle timeout), the busy ones, and the requests
// waiting for a connection when max_connections is reached. Requests wait here, with a
// deadline, rather than piling up in the upstream's listen backlog.
#include "config/config.h"
#include "core/deferred_queue.h"
#include "core/intrusive_list.h"
#include "metrics/worker_metrics.h"
#include "upstream/http1_upstream_connection.h"
#include "upstream/http2_upstream_connection.h"
#include "upstream/upstream_endpoint.h"
#include "upstream/upstream_stream_listener.h"

#include <algorithm>
#include <cstdint>
#include <ev.h>
#include <vector>

namespace portico::upstream {

class UpstreamPool {
public:
  UpstreamPool(struct ev_loop* loop, core::DeferredQueue& deferred, EndpointSpec spec,
               const config::ClusterConfig& cluster, int max_connections,
               metrics::ClusterMetrics& metrics, metrics::EndpointGauges& gauges);
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // Finds client a connection: at once (idle or new) or later from the queue; or fails it.
  // fresh: skip idle connections (a retry after a reused one failed).
  void acquire(UpstreamStreamListener* client, bool fresh);
  // The client left the queue (its exchange ended).
  void cancel(UpstreamStreamListener* client);

  // From Http1UpstreamConnection.
  void release(Http1UpstreamConnection* u, bool reusable, double keepalive_hint);
  void on_closed(Http1UpstreamConnection* u);
  void destroy_later(Http1UpstreamConnection* u);
  struct ev_loop* loop() const {
    return loop_;
  }
  core::DeferredQueue& deferred() const { return deferred_; }
  const config::ClusterConfig& cluster() const { return cluster_; }
  metrics::ClusterMetrics& metrics() { return metrics_; }
  // Counted here rather than in metrics: per endpoint, for /status.
  uint64_t connects() const { return connects_; }
  uint64_t reuses() const { return reuses_; }

  const EndpointSpec& endpoint() const { return spec_; }
  // The endpoint's address, once known (a name waits for the resolver; requests queue).
  void set_address(const SocketAddress& a);
  bool has_address() const { return has_address_; }
  // The name did not resolve and no earlier address is known: fail the waiting requests.
  void address_failed();

  // From Http2UpstreamConnection: a stream opened or ended, more room (SETTINGS), the connection
  // closed.
  void h2_stream_opened();
  void h2_stream_done();
  void h2_serve_waiters();
  void h2_closed(Http2UpstreamConnection* c);

  // For balancing and metrics. With h2c, load counts streams rather than connections.
  size_t busy() const { return total_ - idle_count_; }
  size_t idle() const { return idle_count_; }
  size_t waiting() const { return waiting_; }
  size_t load() const { return (h2_ ? h2_streams_ : busy()) + waiting_; }

  // An idle connection was closed by the upstream after this many seconds idle: retire the
  // others before that from now on, rather than race the upstream's next close.
  void note_idle_closed(double idle_seconds);
  double learned_idle() const { return learned_idle_; }

  // Passive health: after a failed connect the cluster passes the endpoint over for the
  // cluster's fail_timeout (nginx's max_fails=1), then tries it again with real traffic.
  void note_connect_failed();
  void note_connected();
  bool available(double now) const { return connect_failures_ == 0 || now >= down_until_; }

private:
  static void queue_timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void idle_timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void on_queue_timer();
  void on_idle_timer();
  // False when client got no connection: failed, or queued again (a full unix backlog).
  bool connect_for(UpstreamStreamListener* client, bool from_queue = false);
  void enqueue(UpstreamStreamListener* client, bool front);
  // No connection now: wait in the queue (or 503 at once with queue_timeout = 0).
  void wait_for_room(UpstreamStreamListener* client);
  // The connect failed: the endpoint is held down and the client told (502).
  void refuse(UpstreamStreamListener* client);
  // h2c: a stream on a connection with room, a new connection, or the queue.
  void acquire_h2(UpstreamStreamListener* client);
  Http2UpstreamConnection* h2_with_room();
  bool h2_connect();
  void serve_waiters();
  void push_idle(Http1UpstreamConnection* u);
  void unlink_idle(Http1UpstreamConnection* u);
  void arm_queue_timer();
  // Copies the counts into the gauges the admin thread reads.
  void publish();
  double retire_after(double keepalive_hint) const;
  double learned_idle_ = 0; // shortest idle time after which the upstream closed, 0: none seen
  int64_t connect_failures_ = 0;
  double down_until_ = 0;
  // How long a request may wait here: the queue timeout, or while the name is still being
  // resolved, at least the connect timeout.
  double queue_limit() const {
    return has_address_ ? cluster_.queue_timeout
                        : std::max(cluster_.queue_timeout, cluster_.connect_timeout);
  }
  void arm_idle_timer();

  struct ev_loop* loop_;
  core::DeferredQueue& deferred_;
  EndpointSpec spec_;
  const config::ClusterConfig& cluster_;
  SocketAddress address_;
  bool has_address_ = false;
  size_t max_; // 0: unlimited
  metrics::ClusterMetrics& metrics_;
  metrics::EndpointGauges& gauges_;
  uint64_t connects_ = 0;
  uint64_t reuses_ = 0;

  size_t total_ = 0; // open connections, idle included
  using IdleList =
      core::IntrusiveList<Http1UpstreamConnection, &Http1UpstreamConnection::idle_hook>;
  using WaitList = core::IntrusiveList<UpstreamStreamListener, &UpstreamStreamListener::queue_hook>;
  using H2List = core::IntrusiveList<Http2UpstreamConnection, &Http2UpstreamConnection::pool_hook>;
  IdleList idle_; // newest first
  size_t idle_count_ = 0;
  WaitList wait_; // first come, first served
  size_t waiting_ = 0;
  ev_timer queue_timer_;
  ev_timer idle_timer_;
  std::vector<Http1UpstreamConnection*> doomed_;
  bool h2_;               // the cluster speaks h2c upstream
  H2List h2_conns_;       // open h2c connections
  size_t h2_streams_ = 0; // streams in flight on them
  std::vector<Http2UpstreamConnection*> h2_doomed_;
  struct Reaper : core::Deferred {
    UpstreamPool* pool;
    void run_deferred() override;
  } reaper_;
};

} // namespace portico::upstream
