#pragma once
// One client request carried to an upstream and its response carried back: the bridge between
// a client Exchange (HTTP/1 or HTTP/2) and an Http1UpstreamConnection from a pool. Bodies stream
// both ways with backpressure; a failed request is sent again once when retry_policy.h says that
// cannot apply it twice, and only while its whole body is still held.
#include "core/byte_queue.h"
#include "core/deferred_queue.h"
#include "core/small_allocator.h"
#include "metrics/access_log.h"
#include "metrics/worker_metrics.h"
#include "server/exchange.h"
#include "upstream/request_writer.h"
#include "upstream/upstream_stream.h"
#include "upstream/upstream_stream_listener.h"

#include <vector>

namespace portico::upstream {
class Cluster;
class UpstreamPool;
} // namespace portico::upstream

namespace portico::routing {

class ProxiedExchange final : public core::Disposable,
                              public server::ExchangeListener,
                              public upstream::UpstreamStreamListener {
public:
  // Request bodies up to this size are kept for a retry; larger ones are not retried once
  // their first bytes have left for the upstream.
  static constexpr size_t kReplayLimit = 64 * 1024;

  // Where the exchange stands on the upstream side. The client side has its own (the
  // server::Exchange); the two meet in on_exchange_close.
  enum class State : uint8_t {
    WAITING,  // for a way upstream: in a pool's queue, or a retry about to get one
    REQUEST,  // on an upstream connection or stream; no response byte back yet, so a
              // failure may still be retried (retry_policy.h)
    RESPONSE, // the upstream's response is being relayed; a failure now cuts the client
    FINISHED, // the upstream part is over: the response ended, or the client was answered
              // by the proxy (502, 503, 504) or cut; the client exchange may still drain
  };

  // One per request: from the worker's free lists, not malloc.
  static void* operator new(size_t n) { return core::SmallAllocator::local().allocate(n); }
  static void operator delete(void* p) { core::SmallAllocator::local().deallocate(p); }

  // What a route adds to the cluster's ways (the router's, per route; they outlive the
  // exchange).
  struct RouteOptions {
    double timeout = 0; // a deadline for the whole response; 0: none
    int retry_on_reset = -1, retry_non_idempotent = -1; // -1: the cluster's
    std::vector<http::Header> response_add;
    std::vector<std::string> response_remove;
    bool edits_response = false; // either of those is not empty
  };
  // in_flight: counts the exchanges alive (the router's, so that a reload knows when the
  // configuration they started with is no longer used), or null. tunnel_timeout > 0: the
  // request is a WebSocket handshake its route lets through, and the tunnel a 101 opens
  // closes after this long without a byte. options: the route's, or null.
  static void start(server::Exchange& ex, upstream::Cluster& cluster,
                    const upstream::ForwardingOptions& fwd, metrics::RouteMetrics& route,
                    metrics::AccessLog* log, uint32_t* in_flight = nullptr,
                    double tunnel_timeout = 0, const RouteOptions* options = nullptr);
  ~ProxiedExchange() override;
  static metrics::Protocol protocol_of(const server::Exchange& ex);

private:
  ProxiedExchange(server::Exchange& ex, upstream::Cluster& cluster,
                  const upstream::ForwardingOptions& fwd, metrics::RouteMetrics& route,
                  metrics::AccessLog* log);
  void log_access(server::Exchange& ex, double now);

  void on_request_body(server::Exchange& ex, std::string_view data) override;
  void on_request_end(server::Exchange& ex) override;
  void on_response_writable(server::Exchange& ex) override;
  void on_exchange_close(server::Exchange& ex) override;

  void on_upstream_ready(upstream::UpstreamStream& up) override;
  void on_upstream_head(const http::UpstreamResponseHead& head) override;
  void on_upstream_body(std::string_view data) override;
  void on_upstream_trailer(std::string_view name, std::string_view value) override;
  void on_request_trailers(server::Exchange& ex, std::span<const http::Header> trailers) override;
  void on_upstream_end() override;
  void on_upstream_error(upstream::UpstreamError e, upstream::Delivery delivery) override;
  void on_upstream_writable() override;
  void on_queue_timeout() override;
  bool is_head_request() const override { return ex_.request().is_head(); }

  void set_state(State next);
  void write_body(std::string_view data);
  void finish_request();
  void fail(int status);
  // grpc-timeout ran out: a 504 (DEADLINE_EXCEEDED) before the response began, a reset after.
  static void deadline_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void on_deadline();
  // The upstream's response head came: the exchange's state, its status and timings.
  void response_began(int status);
  // The upstream's 101 to a TUNNEL request: the client's side opens too.
  void open_tunnel(const http::UpstreamResponseHead& h, std::span<const http::Header> fields);

  server::Exchange& ex_;
  upstream::Cluster& cluster_;
  const upstream::ForwardingOptions& fwd_;
  metrics::RouteMetrics& route_metrics_;
  double started_at_;   // ev_time(): the request head is complete
  double phase_at_ = 0; // waiting for a connection since, then handed to one at
  int status_ = 0;      // what the client was answered, 0 before that
  metrics::AnsweredBy answered_by_ = metrics::AnsweredBy::NONE;
  metrics::AccessLog* log_; // null: this listener logs nothing
  struct ev_loop* ex_loop_;
  uint32_t* in_flight_ = nullptr;
  // For the access log: phase times of the last attempt, and the body sizes.
  double queue_ = 0, connect_ = 0, first_byte_ = 0;
  uint64_t bytes_in_ = 0, bytes_out_ = 0;
  upstream::UpstreamPool* pool_ = nullptr;
  upstream::UpstreamStream* up_ = nullptr;
  upstream::BodyFraming framing_ = upstream::BodyFraming::NONE;
  upstream::ClientOrigin client_origin_;
  core::ByteQueue replay_;                      // request body so far, while it may still be resent
  std::vector<http::Header> response_trailers_; // copied into the client exchange's arena
  std::vector<http::Header> request_trailers_;  // likewise, sent after the last chunk
  State state_ = State::WAITING;
  // Conditions that hold across states rather than steps of it: the body so far is still
  // held for a retry; the client's request is complete; the one retry is spent; each side
  // is held back for the other (backpressure).
  bool replayable_ = true;
  bool request_ended_ = false;
  bool retried_ = false;
  bool client_paused_ = false;
  bool upstream_paused_ = false;
  // A WebSocket tunnel: asked for (its idle timeout, 0: not a tunnel request), open (the 101
  // came), and an HTTP/2 client's END_STREAM that came before it (passed on once it is open).
  ev_timer deadline_; // grpc-timeout or the route's timeout; active only when there is one
  const RouteOptions* options_ = nullptr;
  double tunnel_timeout_ = 0;
  bool tunnel_ = false;
  bool client_shut_early_ = false;
};

const char* to_string(ProxiedExchange::State s);

} // namespace portico::routing
