#include "routing/proxied_exchange.h"

#include "routing/grpc_status.h"

#include "http/http1_writer.h"
#include "routing/retry_policy.h"
#include "upstream/cluster.h"
#include "upstream/http1_upstream_connection.h"
#include "upstream/request_fields.h"

#include <algorithm>
#include <cassert>
#include <charconv>

namespace portico::routing {

namespace {

constexpr size_t kUpstreamHigh = server::Exchange::kHighWatermark;

int status_for(upstream::UpstreamError e) {
  switch (e) {
  case upstream::UpstreamError::CONNECT_TIMEOUT:
  case upstream::UpstreamError::RESPONSE_TIMEOUT: return 504;
  case upstream::UpstreamError::LOCAL_RESOURCES: return 503;
  default: return 502;
  }
}

} // namespace

metrics::Protocol ProxiedExchange::protocol_of(const server::Exchange& ex) {
  if (ex.request().version != http::Version::HTTP_2)
    return metrics::Protocol::H1;
  return ex.over_tls() ? metrics::Protocol::H2 : metrics::Protocol::H2C;
}

void ProxiedExchange::start(server::Exchange& ex, upstream::Cluster& cluster,
                            const upstream::ForwardingOptions& fwd, metrics::RouteMetrics& route,
                            metrics::AccessLog* log, uint32_t* in_flight, double tunnel_timeout,
                            const RouteOptions* options) {
  auto* p = new ProxiedExchange(ex, cluster, fwd, route, log);
  p->options_ = options;
  if (tunnel_timeout > 0) {
    p->tunnel_timeout_ = tunnel_timeout;
    p->framing_ = upstream::BodyFraming::TUNNEL;
  }
  double deadline = options && options->timeout > 0 ? options->timeout : 0;
  if (ex.request().version == http::Version::HTTP_2 && grpc::is_grpc(ex.request()))
    if (std::optional<double> t = grpc::timeout_of(ex.request()))
      deadline = deadline > 0 ? std::min(deadline, std::max(*t, 1e-6)) : std::max(*t, 1e-6);
  if (deadline > 0) {
    ev_timer_set(&p->deadline_, deadline, 0);
    ev_timer_start(ex.loop(), &p->deadline_);
  }
  if (in_flight) {
    p->in_flight_ = in_flight;
    ++*in_flight;
  }
  ex.set_listener(p);
  p->pool_ = &cluster.pick();
  p->pool_->hold();
  p->phase_at_ = p->started_at_;
  p->pool_->acquire(p, false);
}

ProxiedExchange::~ProxiedExchange() {
  if (ev_is_active(&deadline_)) // most exchanges have none: no call for them
    ev_timer_stop(ex_loop_, &deadline_);
  if (pool_)
    pool_->release();
  if (in_flight_)
    --*in_flight_;
}

void ProxiedExchange::deadline_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<ProxiedExchange*>(w->data)->on_deadline();
}

void ProxiedExchange::on_deadline() {
  if (state_ == State::FINISHED)
    return;
  if (queued)
    pool_->cancel(this);
  if (up_) {
    up_->detach(); // the upstream hears of it as a reset stream, or a closed connection
    up_ = nullptr;
  }
  if (state_ == State::RESPONSE) {
    set_state(State::FINISHED);
    ex_.abort(); // the response has begun: only a reset tells the client
    return;
  }
  fail(504);
}

ProxiedExchange::ProxiedExchange(server::Exchange& ex, upstream::Cluster& cluster,
                                 const upstream::ForwardingOptions& fwd,
                                 metrics::RouteMetrics& route, metrics::AccessLog* log)
    : ex_(ex), cluster_(cluster), fwd_(fwd), route_metrics_(route), started_at_(ev_time()),
      log_(log), ex_loop_(ex.loop()) {
  ev_init(&deadline_, deadline_cb);
  deadline_.data = this;
  client_origin_ = {
      ex.client_address(), ex.over_tls(),
      !fwd.trusted_proxies.empty() && core::in_any(fwd.trusted_proxies, ex.client_address()), &ex};
  // HTTP/1 states its body's length in the head; an HTTP/2 request has a body unless its
  // HEADERS ended the stream.
  framing_ = upstream::body_framing(ex.request(), ex.request().version == http::Version::HTTP_2 &&
                                                      !ex.request_ended());
}

const char* to_string(ProxiedExchange::State s) {
  switch (s) {
  case ProxiedExchange::State::WAITING: return "waiting";
  case ProxiedExchange::State::REQUEST: return "request";
  case ProxiedExchange::State::RESPONSE: return "response";
  case ProxiedExchange::State::FINISHED: return "finished";
  }
  return "?";
}

void ProxiedExchange::set_state(State next) {
  // WAITING -> REQUEST -> RESPONSE -> FINISHED; a retry goes back to WAITING from REQUEST
  // (or from WAITING: a connect refused before the stream was handed over); any state but
  // FINISHED may finish.
  [[maybe_unused]] bool legal = next == State::FINISHED  ? state_ != State::FINISHED
                                : next == State::REQUEST ? state_ == State::WAITING
                                : next == State::RESPONSE
                                    ? state_ == State::REQUEST
                                    : state_ != State::RESPONSE && state_ != State::FINISHED;
  assert(legal && "ProxiedExchange state transition");
  state_ = next;
}

void ProxiedExchange::on_upstream_ready(upstream::UpstreamStream& up) {
  set_state(State::REQUEST);
  up_ = &up;
  double now = ev_time();
  queue_ = now - phase_at_;
  connect_ = 0;
  cluster_.metrics().queue_wait.observe(queue_);
  phase_at_ = now;
  up.send_head(ex_.request(), framing_, client_origin_, fwd_);
  // The body so far, all of it: what arrived while queued (up to a client's flow-control
  // window past kReplayLimit before the pause takes hold), or all of it again on a retry.
  // Sent without draining while it may be needed once more.
  // A tunnel's bytes wait for its 101 (open_tunnel): before it they would be read as HTTP.
  if (framing_ != upstream::BodyFraming::TUNNEL)
    replay_.for_each_run([&](std::string_view run) { up.send_body(run); });
  if (!replayable_)
    replay_.clear();
  if (request_ended_)
    finish_request();
  if (client_paused_ && up.buffered() < kUpstreamHigh) {
    client_paused_ = false;
    ex_.resume_request_body();
  }
}

void ProxiedExchange::write_body(std::string_view data) {
  up_->send_body(data);
}

void ProxiedExchange::finish_request() {
  up_->end_request(request_trailers_);
}

void ProxiedExchange::on_request_body(server::Exchange& ex, std::string_view data) {
  if (data.empty())
    return;
  route_metrics_.bytes_received.inc(data.size());
  bytes_in_ += data.size();
  if (state_ == State::FINISHED)
    return; // answered already (a 502, a 504): nothing is going upstream any more
  bool before_101 = framing_ == upstream::BodyFraming::TUNNEL && !tunnel_; // held, never dropped
  if (replayable_ || !up_ || before_101) {
    if (up_ && !before_101 && replay_.size() + data.size() > kReplayLimit) {
      replayable_ = false; // too large to keep: this request will not be retried
      replay_.clear();
    } else {
      replay_.append(data);
    }
  }
  if (up_ && (framing_ != upstream::BodyFraming::TUNNEL || tunnel_)) {
    write_body(data);
    if (up_->buffered() > kUpstreamHigh && !client_paused_) {
      client_paused_ = true;
      ex.pause_request_body();
    }
  } else if (replay_.size() > kReplayLimit && !client_paused_) {
    // Waiting for a connection (or a tunnel's 101): hold the client back rather than buffer
    // without bound.
    client_paused_ = true;
    ex.pause_request_body();
  }
}

void ProxiedExchange::on_request_end(server::Exchange& ex) {
  if (tunnel_) {
    if (up_)
      up_->end_request({}); // the client shut its side of the tunnel: so does ours upstream
    return;
  }
  // An HTTP/2 client's END_STREAM on a WebSocket CONNECT ends its side of the tunnel to come;
  // an HTTP/1.1 client's handshake request simply ends (its EOF ends the tunnel later).
  if (framing_ == upstream::BodyFraming::TUNNEL && ex.request().version == http::Version::HTTP_2)
    client_shut_early_ = true;
  request_ended_ = true;
  if (up_)
    finish_request();
}

void ProxiedExchange::on_upstream_writable() {
  if (client_paused_) {
    client_paused_ = false;
    ex_.resume_request_body();
  }
}

void ProxiedExchange::on_upstream_head(const http::UpstreamResponseHead& h) {
  http::ResponseHead head;
  head.status = h.status;
  head.content_length = h.chunked ? -1 : h.content_length;
  // As many fields as the upstream sent (its parser bounds them in bytes); views into its
  // head, valid through send_head. One vector per thread: no allocation once warm.
  thread_local std::vector<http::Header> fields;
  fields.clear();
  bool has_connection = false;
  for (const auto& f : h.headers) {
    // Date and Server are the proxy's own, as nginx does; framing is re-decided per client.
    has_connection |= f.name == "connection";
    if (upstream::is_hop_by_hop(f.name) || f.name == "content-length" || f.name == "date" ||
        f.name == "server")
      continue;
    fields.push_back(f);
  }
  // Fields the upstream's Connection names are for this hop only (RFC 9110 7.6.1): rare, so
  // a second pass only then.
  if (has_connection)
    std::erase_if(fields, [&](const http::Header& f) {
      return upstream::named_in_connection(h.headers, f.name);
    });
  if (options_ && options_->edits_response) {
    if (!options_->response_remove.empty())
      std::erase_if(fields, [&](const http::Header& f) {
        return std::find(options_->response_remove.begin(), options_->response_remove.end(),
                         f.name) != options_->response_remove.end();
      });
    fields.insert(fields.end(), options_->response_add.begin(), options_->response_add.end());
  }
  if (framing_ == upstream::BodyFraming::TUNNEL && h.status == 101) {
    open_tunnel(h, fields);
    return;
  }
  if (framing_ == upstream::BodyFraming::TUNNEL && ex_.request().version == http::Version::HTTP_2 &&
      h.status < 300) {
    // An HTTP/2 client takes a 2xx to its extended CONNECT as the tunnel open (RFC 8441 5):
    // an upstream that answered without switching protocols did not open one.
    up_->detach();
    up_ = nullptr;
    fail(502);
    return;
  }
  head.more = fields;
  response_began(h.status);
  ex_.send_head(head);
}

void ProxiedExchange::response_began(int status) {
  set_state(State::RESPONSE);
  answered_by_ = metrics::AnsweredBy::UPSTREAM;
  status_ = status;
  first_byte_ = ev_time() - phase_at_;
  if (up_ && up_->first_on_connection())
    connect_ = up_->connect_seconds(); // a fresh connection: its connect is this request's
  cluster_.metrics().first_byte.observe(first_byte_);
}

void ProxiedExchange::open_tunnel(const http::UpstreamResponseHead& h,
                                  std::span<const http::Header> fields) {
  response_began(101);
  tunnel_ = true;
  replayable_ = false; // nothing is sent twice once the upstream has switched protocols
  // What the client sent before the 101 goes now, as the tunnel's first bytes.
  replay_.for_each_run([&](std::string_view run) { up_->send_body(run); });
  replay_.clear();
  if (client_paused_) {
    client_paused_ = false;
    ex_.resume_request_body();
  }
  up_->set_tunnel_timeout(tunnel_timeout_);
  http::ResponseHead head;
  head.content_length = -1;
  thread_local std::vector<http::Header> kept;
  kept.clear();
  if (ex_.request().version == http::Version::HTTP_2) {
    // RFC 8441 5: the client's 2xx; Sec-WebSocket-Accept answers a key it never sent.
    head.status = 200;
    for (const auto& f : fields)
      if (f.name != "sec-websocket-accept")
        kept.push_back(f);
  } else {
    head.status = 101;
    kept.assign(fields.begin(), fields.end());
  }
  head.more = kept;
  ex_.start_tunnel(head);
  if (client_shut_early_ && up_)
    up_->end_request({});
}

void ProxiedExchange::on_upstream_body(std::string_view data) {
  route_metrics_.bytes_sent.inc(data.size());
  bytes_out_ += data.size();
  ex_.send_body(data);
  if (up_ && !upstream_paused_ && ex_.above_high_watermark()) {
    upstream_paused_ = true;
    up_->pause_reading();
  }
}

void ProxiedExchange::on_response_writable(server::Exchange&) {
  if (upstream_paused_ && up_) {
    upstream_paused_ = false;
    up_->resume_reading();
  }
}

void ProxiedExchange::on_request_trailers(server::Exchange& ex,
                                          std::span<const http::Header> trailers) {
  // Kept for the chunked request's end; a request sent with Content-Length has no place
  // for them.
  for (const auto& t : trailers)
    if (!upstream::is_hop_by_hop(t.name) && t.name != "content-length")
      request_trailers_.push_back({ex.arena().copy(t.name), ex.arena().copy(t.value)});
}

void ProxiedExchange::on_upstream_trailer(std::string_view name, std::string_view value) {
  // The upstream connection's arena is reset when it is handed to the next request, which
  // can happen before on_upstream_end: keep copies in the client exchange's arena.
  if (!upstream::is_hop_by_hop(name) && name != "content-length")
    response_trailers_.push_back({ex_.arena().copy(name), ex_.arena().copy(value)});
}

void ProxiedExchange::on_upstream_end() {
  set_state(State::FINISHED);
  up_ = nullptr;
  cluster_.metrics().upstream.observe(ev_time() - phase_at_);
  // Both may close the exchange (this is then disposed of, not yet destroyed).
  if (response_trailers_.empty())
    ex_.end_response();
  else
    ex_.end_response_with_trailers(response_trailers_);
}

void ProxiedExchange::on_upstream_error(upstream::UpstreamError e, upstream::Delivery delivery) {
  up_ = nullptr;
  if (state_ == State::RESPONSE) {
    set_state(State::FINISHED);
    ex_.abort(); // the client must see a cut response, never a clean short one
    return;
  }
  const auto& cfg = cluster_.config();
  std::optional<RetryReason> why =
      retried_
          ? std::nullopt
          : retry_reason({options_ && options_->retry_on_reset >= 0 ? options_->retry_on_reset == 1
                                                                    : cfg.retry_on_reset,
                          options_ && options_->retry_non_idempotent >= 0
                              ? options_->retry_non_idempotent == 1
                              : cfg.retry_non_idempotent},
                         e, delivery, ex_.request().method, replayable_);
  // A connect that failed goes to another endpoint (this one is now held down), as nginx's
  // proxy_next_upstream error does; with no other endpoint, trying again now is pointless.
  upstream::UpstreamPool* next = why == RetryReason::CONNECT_FAILED ? &cluster_.pick() : pool_;
  if (!why || (why == RetryReason::CONNECT_FAILED && next == pool_)) {
    fail(status_for(e));
    return;
  }
  retried_ = true;
  set_state(State::WAITING);
  pool_->metrics().errors[metrics::kErrorRetried].inc();
  pool_->metrics().retries[static_cast<size_t>(*why)].inc();
  next->hold();
  pool_->release();
  pool_ = next;
  phase_at_ = ev_time();
  pool_->acquire(this, true);
}

void ProxiedExchange::on_queue_timeout() {
  fail(503);
}

void ProxiedExchange::fail(int status) {
  set_state(State::FINISHED);
  status_ = status;
  answered_by_ = metrics::AnsweredBy::PROXY;
  std::string_view reason = http::reason_phrase(status);
  if (ex_.request().version == http::Version::HTTP_2 && grpc::is_grpc(ex_.request())) {
    grpc::respond_error(ex_, status, reason); // may close the exchange
    return;
  }
  char body[64];
  size_t n = std::min(reason.size(), sizeof body - 1);
  std::copy_n(reason.data(), n, body);
  body[n++] = '\n';
  ex_.respond(status, "text/plain", {body, n}); // may close the exchange
}

void ProxiedExchange::log_access(server::Exchange& ex, double now) {
  const auto& req = ex.request();
  metrics::AccessLogEntry e;
  e.client = ex.client_address();
  e.protocol = metrics::to_string(protocol_of(ex));
  e.method = req.method;
  e.authority = req.authority;
  e.target = req.target;
  e.status = status_;
  e.bytes_in = bytes_in_;
  e.bytes_out = bytes_out_;
  e.queue = queue_;
  e.connect = connect_;
  e.first_byte = first_byte_;
  e.total = now - started_at_;
  e.upstream = pool_ ? std::string_view(pool_->endpoint().text) : std::string_view();
  e.retries = retried_ ? 1 : 0;
  log_->record(e);
}

void ProxiedExchange::on_exchange_close(server::Exchange& ex) {
  // A client gone before any answer counts as 499, nginx's "client closed request".
  route_metrics_.requests.inc(ex.listener_index(), protocol_of(ex), status_ ? status_ : 499,
                              status_ ? answered_by_ : metrics::AnsweredBy::NONE);
  double now = ev_time();
  route_metrics_.duration.observe(now - started_at_);
  if (log_)
    log_access(ex, now);
  if (ev_is_active(&deadline_))
    ev_timer_stop(ex_loop_, &deadline_);
  if (queued)
    pool_->cancel(this);
  if (up_)
    up_->detach();
  // Destroyed after the callback that closed the exchange has returned: the upstream side or
  // the client exchange may be below us on the stack.
  pool_->deferred().dispose(this);
}

} // namespace portico::routing
