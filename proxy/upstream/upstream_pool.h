#pragma once
// One worker thread's way to one upstream endpoint, whatever its protocol: the requests
// waiting for a connection when max_connections is reached (with a deadline, rather than
// piling up in the upstream's listen backlog), the endpoint's address and passive health, and
// the gauges. The connections themselves are kept by a ConnectionPool for the cluster's
// protocol (Http1ConnectionPool, Http2ConnectionPool).
#include "config/config.h"
#include "core/deferred_queue.h"
#include "core/endpoint_address.h"
#include "core/intrusive_list.h"
#include "metrics/worker_metrics.h"
#include "tls/tls_session.h"
#include "upstream/connection_pool.h"
#include "upstream/upstream_stream_listener.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <ev.h>
#include <memory>
#include <openssl/ssl.h>
#include <string>

namespace portico::upstream {

class HealthChecker;

class UpstreamPool {
public:
  // tls: the cluster's client context (referenced while the pool lives), or null.
  UpstreamPool(struct ev_loop* loop, core::DeferredQueue& deferred, core::EndpointSpec spec,
               const config::ClusterConfig& cluster, int max_connections,
               metrics::ClusterMetrics& metrics, metrics::EndpointGauges& gauges,
               SSL_CTX* tls = nullptr);
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // Finds listener a way upstream: at once (a connection free or new) or later from the
  // queue; or fails it. fresh: not on an idle HTTP/1.1 connection (a retry after a reused one
  // failed).
  void acquire(UpstreamStreamListener* listener, bool fresh);
  // The listener left the queue (its exchange ended).
  void cancel(UpstreamStreamListener* listener);

  struct ev_loop* loop() const {
    return loop_;
  }
  core::DeferredQueue& deferred() const { return deferred_; }
  const config::ClusterConfig& cluster() const { return cluster_; }
  // An exchange's timer first looks this soon: its on_timer then works out which limit applies
  // (send_timeout while the request goes up, response_timeout once it is sent) and re-arms.
  double first_timer_check() const {
    return std::min(cluster_.send_timeout, cluster_.response_timeout);
  }
  metrics::ClusterMetrics& metrics() { return metrics_; }
  ConnectionPool& connections() { return *conns_; }
  uint64_t connects() const { return connects_; }

  const core::EndpointSpec& endpoint() const { return spec_; }
  // TLS to this endpoint: the context (null: cleartext), the name sent and verified, and the
  // last session a connection here left, which the next one resumes.
  SSL_CTX* tls() const { return tls_; }
  const std::string& tls_server_name() const { return tls_server_name_; }
  SSL_SESSION* tls_session() const { return tls_session_; }
  void keep_tls_session(SSL_SESSION* s); // takes the reference
  // A client session on a connected fd: the context, name, verification and session to
  // resume are this endpoint's. Null when OpenSSL fails.
  std::unique_ptr<tls::TlsSession> start_tls(int fd) const;
  // A connection's handshake failed (why): logged, the endpoint held down, counted.
  void tls_failed(const char* why);
  // The endpoint's address, once known (a name waits for the resolver; requests queue).
  void set_address(const core::SocketAddress& a);
  bool has_address() const { return has_address_; }
  const core::SocketAddress& address() const { return address_; }
  // Exchanges that point at this pool (for the access log, the deferral queue), whatever they
  // are doing: a pool whose address a name no longer resolves to is destroyed only once none
  // is left, and nothing is queued or connected (unused()).
  void hold() { ++users_; }
  void release() { --users_; }
  bool unused() const { return users_ == 0 && waiting_ == 0 && conns_->in_flight() == 0; }
  // The name did not resolve and no earlier address is known: fail the waiting requests.
  void address_failed();

  // For balancing and metrics.
  size_t idle() const { return conns_->idle(); }
  size_t busy() const { return conns_->connections() - conns_->idle(); }
  size_t waiting() const { return waiting_; }
  size_t load() const { return conns_->in_flight() + waiting_; }
  // The endpoint's weight (every address of a name has it), and the smooth weighted round
  // robin's running score (the cluster's, kept here).
  int weight = 1;
  int64_t wrr_score = 0;
  // Its name in a sticky cookie: a hash of its address, the same in every worker and process.
  std::string sticky_id;

  // Passive health: after a failed connect the cluster passes the endpoint over for the
  // cluster's fail_timeout (nginx's max_fails=1), then tries it again with real traffic.
  // say: log the failure (false when the caller said it with more detail).
  void note_connect_failed(UpstreamError e, bool say = true);
  void note_connected();
  bool available(double now) const {
    return (connect_failures_ == 0 || now >= down_until_) &&
           (!ejected_until || now >= ejected_until->load(std::memory_order_relaxed));
  }
  // Outlier detection's verdict on this endpoint (upstream/outlier_detector.h), when the
  // cluster has it: passed over until then, by every worker.
  const std::atomic<double>* ejected_until = nullptr;
  size_t endpoint_index = 0; // its index in the cluster's endpoints
  // Active health ([[cluster]] health_check): true when not checked, or passing.
  bool healthy() const;
  void note_health(bool healthy); // from the checker: the gauges follow
  // The address is gone from the name's answers: no more checks of it (its pool drains).
  void stop_health_checks();

  // From the ConnectionPool.
  // Another connection may be opened now (an address, and room under max_connections).
  bool may_open() const { return has_address_ && !at_limit(); }
  // The first waiting request, taken out of the queue; null when none waits.
  UpstreamStreamListener* take_waiter();
  // A connection closed or a stream ended: room for a waiting request, maybe.
  void room_freed();
  // The connection counts changed: copy them into the gauges the admin thread reads.
  void publish();

private:
  static void queue_timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void on_queue_timer();
  bool at_limit() const { return max_ > 0 && conns_->connections() >= max_; }
  // False when listener got no connection: failed, or queued again (a full unix backlog).
  bool connect_for(UpstreamStreamListener* listener, bool from_queue = false);
  void enqueue(UpstreamStreamListener* listener, bool front);
  // No connection now: wait in the queue (or 503 at once with queue_timeout = 0).
  void wait_for_room(UpstreamStreamListener* listener);
  // The connect failed: the endpoint is held down and the listener told (502).
  void refuse(UpstreamStreamListener* listener);
  void serve_waiters();
  void arm_queue_timer();
  // How long a request may wait here: the queue timeout, or while the name is still being
  // resolved, at least the connect timeout.
  double queue_limit() const {
    return has_address_ ? cluster_.queue_timeout
                        : std::max(cluster_.queue_timeout, cluster_.connect_timeout);
  }

  struct ev_loop* loop_;
  core::DeferredQueue& deferred_;
  core::EndpointSpec spec_;
  SSL_CTX* tls_ = nullptr;
  std::string tls_server_name_;
  SSL_SESSION* tls_session_ = nullptr;
  std::unique_ptr<HealthChecker> checker_; // with health_check
  const config::ClusterConfig& cluster_;
  core::SocketAddress address_;
  bool has_address_ = false;
  size_t max_; // 0: unlimited
  metrics::ClusterMetrics& metrics_;
  metrics::EndpointGauges& gauges_;
  uint64_t connects_ = 0;
  uint32_t users_ = 0;
  // What this pool has added to the shared gauges (publish() adds the difference).
  int64_t published_idle_ = 0, published_busy_ = 0, published_waiting_ = 0;
  int64_t connect_failures_ = 0;
  double down_until_ = 0;

  using WaitList = core::IntrusiveList<UpstreamStreamListener, &UpstreamStreamListener::queue_hook>;
  WaitList wait_; // first come, first served
  size_t waiting_ = 0;
  ev_timer queue_timer_;
  std::unique_ptr<ConnectionPool> conns_;
};

} // namespace portico::upstream
