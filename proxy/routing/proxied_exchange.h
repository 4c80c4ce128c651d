#pragma once
// One routed request from its head to its close: the bridge between a client Exchange (HTTP/1
// or HTTP/2), its route's filters (filter_chain.h) and an upstream stream from a pool. Bodies
// stream both ways with backpressure; a failed try is made again (proxied_exchange_retry.cc)
// when retry_policy.h says that cannot apply it twice, only while its whole body is still
// held, and as often, as soon and as much as the cluster's retry settings allow. Every request
// the router sees becomes one, even one answered at once (a redirect, a 404): its accounting
// (exchange_record.h) happens here, once, when it closes.
#include "core/byte_queue.h"
#include "core/deferred_queue.h"
#include "core/small_allocator.h"
#include "metrics/cluster_policy_counters.h"
#include "routing/exchange_record.h"
#include "routing/filter_chain.h"
#include "routing/hedge.h"
#include "routing/retry_policy.h"
#include "routing/route.h"
#include "routing/tunnel_goodbye.h"
#include "server/exchange.h"
#include "upstream/request_writer.h"
#include "upstream/upstream_stream.h"
#include "upstream/upstream_stream_listener.h"

#include <ev.h>
#include <memory>
#include <vector>

namespace portico::upstream {
class Cluster;
class UpstreamPool;
} // namespace portico::upstream

namespace portico::routing {

class ProxiedExchange final : public core::Disposable,
                              public server::ExchangeListener,
                              public upstream::UpstreamStreamListener,
                              private FilterChain::Terminal,
                              private KeptExchange,
                              public core::SmallAllocated<ProxiedExchange> { // one per request
public:
  // Request bodies up to this size are kept for a retry; larger ones are not retried once
  // their first bytes have left for the upstream.
  static constexpr size_t kReplayLimit = 64 * 1024;
  // Responses read on at once for a filter after their clients went (FilterChain::
  // keep_response), per worker: clients that ask and leave cannot make more upstream work.
  static constexpr size_t kMaxKept = 64;

  // Where the exchange stands on the upstream side. The client side has its own (the
  // server::Exchange); the two meet in on_exchange_close.
  enum class State : uint8_t {
    WAITING,  // for its filters, or a way upstream: in a pool's queue, or a retry about to
              // get one
    REQUEST,  // on an upstream connection or stream; no response byte back yet, so a
              // failure may still be retried (retry_policy.h)
    RESPONSE, // the upstream's response is being relayed; a failure now cuts the client
    FINISHED, // the upstream part is over: the response ended, or the client was answered
              // by the proxy (a filter, a 502, 503, 504) or cut; the client may still drain
  };

  // Takes ex over: its head goes through the route's filters, then to the route's cluster.
  // tunnel_timeout > 0: the request is a WebSocket handshake its route lets through, and the
  // tunnel a 101 opens closes after this long without a byte. route and ctx outlive it.
  static void start(server::Exchange& ex, const Route& route, const RouterContext& ctx,
                    metrics::AccessLog* log, double tunnel_timeout = 0);
  // Answers ex with status and body (text/plain) without going upstream (no route, a
  // handshake the route refuses): through the route's filters' response side all the same.
  static void answer(server::Exchange& ex, const Route& route, const RouterContext& ctx,
                     metrics::AccessLog* log, int status, std::string_view body);
  ~ProxiedExchange() override;

private:
  friend class Hedge; // a second try of this request, which may take its place
  ProxiedExchange(server::Exchange& ex, const Route& route, const RouterContext& ctx,
                  metrics::AccessLog* log);

  // The client's side.
  void on_request_body(server::Exchange& ex, std::string_view data) override;
  void on_request_trailers(server::Exchange& ex, std::span<const http::Header> trailers) override;
  void on_request_end(server::Exchange& ex) override;
  void on_response_writable(server::Exchange& ex) override;
  void on_exchange_close(server::Exchange& ex) override;
  bool on_goodbye(server::Exchange& ex) override;

  // The filters' far end.
  void chain_request_head() override { go_upstream(); }
  void chain_request_body(std::string_view data, bool end) override;
  void chain_request_trailers(std::span<const http::Header> trailers) override;
  void chain_answered(int status, const char* why) override;
  void chain_hold_request(bool hold) override { hold_client(kHeldByChain, hold); }
  void chain_response_drained() override { maybe_resume_upstream(); }
  void chain_kept_over() override;
  // The router goes while the response is kept (a worker's stop).
  void abandon() override { chain_kept_over(); }

  // The upstream's side.
  void on_upstream_ready(upstream::UpstreamStream& up) override;
  void on_upstream_head(const http::UpstreamResponseHead& head) override;
  void on_upstream_body(std::string_view data) override;
  void on_upstream_trailer(std::string_view name, std::string_view value) override;
  void on_upstream_end() override;
  void on_upstream_error(upstream::UpstreamError e, upstream::Delivery delivery) override;
  void on_upstream_writable() override { hold_client(kHeldByUpstream, false); }
  void on_queue_timeout() override {
    leave(metrics::Breaker::MAX_PENDING);
    log_failure(503, "queue_timeout (every connection busy at max_connections)");
    fail(503);
  }
  bool is_head_request() const override { return !closed_ && ex_.request().is_head(); }

  void set_state(State next);
  // The head passed the filters: a pool, and a place in its queue.
  void go_upstream();
  // The cluster's endpoint for this request (by its hash key or sticky cookie, if the cluster
  // has them).
  upstream::UpstreamPool& pick();
  // A connection of pool_ for this request (retry: a second try), or a place in its queue, a
  // place under max_pending with it; false when the request was refused (a full breaker).
  bool acquire(bool retry);
  // The cluster's circuit breakers: the places this request holds.
  bool enter(metrics::Breaker b);
  void leave(metrics::Breaker b);
  // A breaker was full: 503 at once, x-portico-overflow saying which.
  void overflow(metrics::Breaker b);
  // Retries (proxied_exchange_retry.cc). A try failed with e (what: the error log's word for
  // it): the next try, or the failure answered.
  void try_failed(upstream::UpstreamError e, upstream::Delivery delivery, const char* what);
  // The try on up_ failed (what: the error log's word): the hedge racing it goes on alone,
  // or the next try, or the failure answered.
  void primary_failed(upstream::UpstreamError e, upstream::Delivery delivery, const char* what);
  // Hedging (routing/hedge.h): armed when a try goes up, if the cluster hedges and the
  // request may be sent twice; the hedge's head came first; the hedge failed.
  void maybe_hedge();
  void hedge_won(Hedge& h);
  void hedge_failed(upstream::UpstreamError e, upstream::Delivery delivery);
  // The upstream answered status: true when, by [[cluster]] retry on_status, the response is
  // dropped and the request tried again.
  bool retry_status(int status);
  // Whether the retry budget and the max_retries breaker have room for one more retry (a place
  // under the breaker is then held); false with the access log's $limit saying which is full.
  bool retry_allowed();
  // The next try for why, on next: now, or after its backoff.
  void retry(RetryReason why, upstream::UpstreamPool* next);
  RetryPolicy retry_policy() const;
  // Why this request, which reached the application, may be sent once more (for an
  // on_status retry or a hedge), or none.
  std::optional<RetryReason> resend_reason() const;
  // One timer: a retry's backoff while WAITING, a try's per_try_timeout while REQUEST.
  void start_timer(double seconds);
  void stop_timer() { ev_timer_stop(ex_.loop(), &timer_); }
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  // Request bytes for the upstream (held meanwhile, and for a retry), and the request's end.
  void upstream_body(std::string_view data);
  void upstream_end();
  void keep_trailers(std::span<const http::Header> trailers);
  // The upstream part ends here: out of the pool's queue, off its stream.
  void stop_upstream();
  void fail(int status, std::string_view body = {}, std::span<const http::Header> fields = {});
  // The error log's line for a request failed here (routing/failure_log.h).
  void log_failure(int status, const char* what) const;
  // The upstream's response head came: the exchange's state, its status and timings.
  void response_began(int status);
  // The upstream's 101 to a TUNNEL request: the client's side opens too.
  void open_tunnel(std::span<const http::Header> fields);
  // A tunnel's bytes towards the upstream, past the goodbye's frame tracking.
  void tunnel_to_upstream(std::string_view data);
  void say_goodbye(TunnelGoodbye::Direction d);
  // date: the upstream's Date field, for the filters.
  void send_response_head(int status, int64_t content_length, std::vector<http::Header>& fields,
                          bool tunnel, std::string_view date = {});
  // The client is held back while either holder wants it; the upstream while the client's
  // buffer or the chain's is above its high watermark.
  static constexpr uint8_t kHeldByUpstream = 1, kHeldByChain = 2;
  void hold_client(uint8_t by, bool hold) {
    uint8_t was = client_held_;
    client_held_ = hold ? client_held_ | by : client_held_ & ~by;
    if ((was == 0) != (client_held_ == 0)) // nearly never: a test per request otherwise
      hold_client_changed();
  }
  void hold_client_changed();
  void maybe_pause_upstream() {
    if (up_ && !upstream_paused_ &&
        ((!closed_ && ex_.above_high_watermark()) || (chain_ && chain_->response_high()))) {
      upstream_paused_ = true;
      up_->pause_reading();
    }
  }
  void maybe_resume_upstream();

  server::Exchange& ex_;
  upstream::Cluster* cluster_; // null: a route whose filters answer
  const RouterContext& ctx_;
  ExchangeRecord record_;
  FilterChain* chain_ = nullptr; // null: no filter for this request, none is called
  ExchangeOptions options_;      // the route's overrides, as its filters set them
  double phase_at_ = 0;          // waiting for a connection since, then handed to one at
  upstream::UpstreamPool* pool_ = nullptr;
  upstream::UpstreamStream* up_ = nullptr;
  upstream::BodyFraming framing_ = upstream::BodyFraming::NONE;
  upstream::ClientOrigin client_origin_;
  core::ByteQueue replay_;                      // request body so far, while it may still be resent
  std::vector<http::Header> response_trailers_; // copied into the client exchange's arena
  std::vector<http::Header> request_trailers_;  // likewise, sent after the last chunk
  double tunnel_timeout_ = 0;
  ev_timer timer_;
  Hedge* hedge_ = nullptr;                 // at most one per request
  std::unique_ptr<TunnelGoodbye> goodbye_; // a WebSocket tunnel's frame tracking, once open
  State state_ = State::WAITING;
  // Conditions that hold across states rather than steps of it: the body so far is still
  // held for a retry; the client's request is complete (and came with trailers); the tries
  // made again so far; the client exchange has closed; who holds the client back; the upstream
  // is held back (backpressure).
  bool replayable_ = true;
  bool request_ended_ = false;
  bool request_had_trailers_ = false;
  uint8_t retries_ = 0;
  bool primary_lost_ = false; // the first try failed while its hedge raced on
  uint8_t breakers_held_ = 0; // a bit per metrics::Breaker this request holds a place under
  bool closed_ = false;
  // The client went and a filter keeps the response (FilterChain::keep_response): it is read
  // on with ex_ gone, until chain_kept_over; and it came with trailers (which none keeps).
  bool kept_ = false;
  bool kept_trailers_ = false;
  uint8_t client_held_ = 0;
  bool upstream_paused_ = false;
  // A WebSocket tunnel open (the 101 came), and an HTTP/2 client's END_STREAM that came before
  // it (passed on once it is open).
  bool tunnel_ = false;
  bool client_shut_early_ = false;
};

const char* to_string(ProxiedExchange::State s);

} // namespace portico::routing
