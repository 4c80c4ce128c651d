#include "routing/proxied_exchange.h"

#include "http/http1_response_parser.h"
#include "routing/endpoint_affinity.h"
#include "routing/failure_log.h"
#include "routing/real_client.h"
#include "upstream/cluster.h"
#include "upstream/request_fields.h"

#include <algorithm>
#include <cassert>

namespace portico::routing {

namespace {

constexpr size_t kUpstreamHigh = server::Exchange::kHighWatermark;

// One per request in flight, from SmallAllocator's power-of-two classes: a few bytes over 512
// take a 1 KiB chunk each (thousands of them at a few thousand busy clients).
static_assert(sizeof(ProxiedExchange) <= 512, "ProxiedExchange outgrew its 512-byte chunk");

} // namespace

ProxiedExchange::ProxiedExchange(server::Exchange& ex, const Route& route, const RouterContext& ctx,
                                 metrics::AccessLog* log)
    : ex_(ex), cluster_(route.cluster), ctx_(ctx), record_(ex, route, log) {
  const auto& fwd = *ctx.fwd;
  client_origin_ = {ex.client_address(), ex.over_tls(),
                    // The proxy's own request (a forward auth's) says who the client is itself.
                    ex.internal() || (!fwd.trusted_proxies.empty() &&
                                      core::in_any(fwd.trusted_proxies, ex.client_address())),
                    &ex};
  // HTTP/1 states its body's length in the head; an HTTP/2 request has a body unless its
  // HEADERS ended the stream.
  framing_ = upstream::body_framing(ex.request(), ex.request().framed() && !ex.request_ended());
  if (ctx.in_flight)
    ++*ctx.in_flight;
  ev_init(&timer_, timer_cb);
  timer_.data = this;
  ex.set_listener(this);
  if (route.may_filter(ex)) {
    options_.client = client_origin_.trusted
                          ? real_client(ex.client_address(), ex.request(), fwd.trusted_proxies)
                          : ex.client_address();
    chain_ = FilterChain::make(route.filters, ex, *this, options_);
  }
}

void ProxiedExchange::start(server::Exchange& ex, const Route& route, const RouterContext& ctx,
                            metrics::AccessLog* log, double tunnel_timeout) {
  auto* p = new ProxiedExchange(ex, route, ctx, log);
  if (tunnel_timeout > 0) {
    p->tunnel_timeout_ = tunnel_timeout;
    p->framing_ = upstream::BodyFraming::TUNNEL;
  }
  if (p->chain_)
    p->chain_->request_head(); // on to go_upstream once every filter let it pass
  else
    p->go_upstream();
}

void ProxiedExchange::answer(server::Exchange& ex, const Route& route, const RouterContext& ctx,
                             metrics::AccessLog* log, int status, std::string_view body) {
  auto* p = new ProxiedExchange(ex, route, ctx, log);
  p->fail(status, body);
}

ProxiedExchange::~ProxiedExchange() {
  for (size_t b = 0; b < metrics::kBreakerCount; ++b)
    leave(static_cast<metrics::Breaker>(b));
  delete hedge_; // cancelled first, if it still races
  delete chain_;
  if (pool_)
    pool_->release();
  if (ctx_.in_flight)
    --*ctx_.in_flight;
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

// ---- the client's side, through the filters ----

void ProxiedExchange::on_request_body(server::Exchange&, std::string_view data) {
  if (data.empty())
    return;
  record_.add_request_bytes(data.size());
  // A tunnel's bytes are not HTTP: they bypass the filters (its head went through them).
  if (chain_ && framing_ != upstream::BodyFraming::TUNNEL)
    chain_->request_body(data, false);
  else
    upstream_body(data);
}

void ProxiedExchange::on_request_trailers(server::Exchange&,
                                          std::span<const http::Header> trailers) {
  request_had_trailers_ = true;
  if (chain_)
    chain_->request_trailers(trailers); // the request's end, through the filters
  else
    keep_trailers(trailers);
}

void ProxiedExchange::on_request_end(server::Exchange&) {
  if (chain_ && framing_ != upstream::BodyFraming::TUNNEL) {
    if (!request_had_trailers_)
      chain_->request_body({}, true);
  } else {
    upstream_end();
  }
}

void ProxiedExchange::chain_request_body(std::string_view data, bool end) {
  if (!data.empty())
    upstream_body(data);
  if (end)
    upstream_end();
}

void ProxiedExchange::chain_request_trailers(std::span<const http::Header> trailers) {
  keep_trailers(trailers);
  upstream_end();
}

void ProxiedExchange::keep_trailers(std::span<const http::Header> trailers) {
  // Kept for the chunked request's end; a request sent with Content-Length has no place
  // for them.
  for (const auto& t : trailers)
    if (!upstream::is_hop_by_hop(t.name) && t.name != "content-length")
      request_trailers_.push_back({ex_.arena().copy(t.name), ex_.arena().copy(t.value)});
}

void ProxiedExchange::upstream_body(std::string_view data) {
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
  if (up_ && !before_101) {
    if (goodbye_)
      tunnel_to_upstream(data);
    else
      up_->send_body(data);
    if (up_->buffered() > kUpstreamHigh)
      hold_client(kHeldByUpstream, true);
  } else if (replay_.size() > kReplayLimit) {
    // Waiting for a connection (or a tunnel's 101): hold the client back rather than buffer
    // without bound.
    hold_client(kHeldByUpstream, true);
  }
}

void ProxiedExchange::upstream_end() {
  if (tunnel_) {
    // The client shut its side of the tunnel: so does ours upstream (unless the goodbye did).
    if (up_ && !(goodbye_ && goodbye_->over(TunnelGoodbye::TO_UPSTREAM)))
      up_->end_request({});
    return;
  }
  // An HTTP/2 client's END_STREAM on a WebSocket CONNECT ends its side of the tunnel to come;
  // an HTTP/1.1 client's handshake request simply ends (its EOF ends the tunnel later).
  if (framing_ == upstream::BodyFraming::TUNNEL && ex_.request().framed())
    client_shut_early_ = true;
  request_ended_ = true;
  if (up_)
    up_->end_request(request_trailers_);
}

void ProxiedExchange::hold_client_changed() {
  if (closed_)
    return;
  if (client_held_)
    ex_.pause_request_body();
  else
    ex_.resume_request_body();
}

void ProxiedExchange::chain_answered(int status, const char* why) {
  // A filter answered (or cut the response): the upstream part ends here.
  if (why)
    log_failure(status, why);
  stop_upstream();
  if (state_ != State::FINISHED)
    set_state(State::FINISHED);
  if (status)
    record_.answered(status, metrics::AnsweredBy::PROXY);
  hold_client(kHeldByUpstream | kHeldByChain, false); // what it still sends is dropped
}

// ---- the upstream's side ----

void ProxiedExchange::go_upstream() {
  if (!cluster_) {
    fail(502); // the configuration gives every route a cluster or an answer: never here
    return;
  }
  if (!enter(metrics::Breaker::MAX_REQUESTS)) {
    overflow(metrics::Breaker::MAX_REQUESTS);
    return;
  }
  pool_ = &pick();
  pool_->hold();
  phase_at_ = record_.started_at;
  acquire(false);
}

upstream::UpstreamPool& ProxiedExchange::pick() {
  const auto& cfg = cluster_->config();
  if (!cfg.sticky.enabled && !cluster_->hashes())
    return cluster_->pick();
  std::string_view client = options_.client;
  if (client.empty())
    client = client_origin_.trusted
                 ? real_client(ex_.client_address(), ex_.request(), ctx_.fwd->trusted_proxies)
                 : ex_.client_address();
  return cluster_->pick(affinity_of(*cluster_, ex_.request(), client));
}

bool ProxiedExchange::acquire(bool retry) {
  pool_->acquire(this, retry);
  if (!queued)
    return true; // a connection, or already an answer
  if (enter(metrics::Breaker::MAX_PENDING))
    return true;
  pool_->cancel(this);
  overflow(metrics::Breaker::MAX_PENDING);
  return false;
}

bool ProxiedExchange::enter(metrics::Breaker b) {
  uint8_t bit = uint8_t(1) << static_cast<int>(b);
  if (breakers_held_ & bit)
    return true;
  if (!cluster_->enter(b))
    return false;
  breakers_held_ |= bit;
  return true;
}

void ProxiedExchange::leave(metrics::Breaker b) {
  uint8_t bit = uint8_t(1) << static_cast<int>(b);
  if (!(breakers_held_ & bit))
    return;
  breakers_held_ &= static_cast<uint8_t>(~bit);
  cluster_->leave(b);
}

void ProxiedExchange::overflow(metrics::Breaker b) {
  static constexpr std::string_view kWhy[] = {"breaker max_pending", "breaker max_requests",
                                              "breaker max_retries"};
  options_.limit = kWhy[static_cast<size_t>(b)];
  log_failure(503, kWhy[static_cast<size_t>(b)].data());
  const http::Header field{"x-portico-overflow", metrics::kBreakers[static_cast<size_t>(b)]};
  fail(503, {}, {&field, 1});
}

void ProxiedExchange::stop_upstream() {
  stop_timer();
  if (hedge_)
    hedge_->cancel();
  leave(metrics::Breaker::MAX_PENDING);
  if (queued)
    pool_->cancel(this);
  if (up_) {
    up_->detach(); // the upstream hears of it as a reset stream, or a closed connection
    up_ = nullptr;
  }
}

void ProxiedExchange::on_upstream_ready(upstream::UpstreamStream& up) {
  leave(metrics::Breaker::MAX_PENDING);
  set_state(State::REQUEST);
  up_ = &up;
  double now = ev_time();
  record_.queue = now - phase_at_;
  record_.connect = 0;
  cluster_->metrics().queue_wait.observe(record_.queue);
  phase_at_ = now;
  up.send_head(ex_.request(), framing_, client_origin_, *ctx_.fwd);
  // The body so far, all of it: what arrived while queued (up to a client's flow-control
  // window past kReplayLimit before the pause takes hold), or all of it again on a retry.
  // Sent without draining while it may be needed once more.
  // A tunnel's bytes wait for its 101 (open_tunnel): before it they would be read as HTTP.
  if (framing_ != upstream::BodyFraming::TUNNEL)
    replay_.for_each_run([&](std::string_view run) { up.send_body(run); });
  if (!replayable_)
    replay_.clear();
  if (request_ended_)
    up.end_request(request_trailers_);
  if ((client_held_ & kHeldByUpstream) && up.buffered() < kUpstreamHigh)
    hold_client(kHeldByUpstream, false);
  if (cluster_->config().retry.per_try_timeout > 0 && framing_ != upstream::BodyFraming::TUNNEL)
    start_timer(cluster_->config().retry.per_try_timeout);
  maybe_hedge();
}

void ProxiedExchange::on_upstream_head(const http::UpstreamResponseHead& h) {
  if (hedge_ && !hedge_->won())
    hedge_->cancel(); // the first try answered first
  if (h.status >= 500 && retry_status(h.status))
    return; // dropped, its stream with it: the request is on its next try
  // As many fields as the upstream sent (its parser bounds them in bytes); views into its
  // head, valid through the call. One vector per thread: no allocation once warm.
  thread_local std::vector<http::Header> fields;
  fields.clear();
  bool has_connection = false;
  std::string_view date;
  for (const auto& f : h.headers) {
    // Date and Server are the proxy's own, as nginx does; framing is re-decided per client.
    has_connection |= f.name == "connection";
    if (f.name == "date")
      date = date.data() ? std::string_view("") : f.value; // two: as good as none
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
  if (framing_ == upstream::BodyFraming::TUNNEL && h.status == 101) {
    open_tunnel(fields);
    return;
  }
  if (framing_ == upstream::BodyFraming::TUNNEL && ex_.request().framed() && h.status < 300) {
    // An HTTP/2 client takes a 2xx to its extended CONNECT as the tunnel open (RFC 8441 5):
    // an upstream that answered without switching protocols did not open one.
    log_failure(502, "the upstream answered a WebSocket CONNECT without opening a tunnel");
    stop_upstream();
    fail(502);
    return;
  }
  response_began(h.status);
  if (cluster_->config().sticky.enabled)
    if (auto cookie = sticky_cookie(cluster_->config().sticky, *pool_, ex_.request(), ex_.arena()))
      fields.push_back(*cookie);
  send_response_head(h.status, h.chunked ? -1 : h.content_length, fields, false, date);
}

void ProxiedExchange::send_response_head(int status, int64_t content_length,
                                         std::vector<http::Header>& fields, bool tunnel,
                                         std::string_view date) {
  if (chain_) {
    FilterResponseHead head{status, content_length, &fields, ResponseSource::UPSTREAM, tunnel};
    head.upstream_date = date;
    chain_->response_head(head);
    return;
  }
  http::ResponseHead head;
  head.status = status;
  head.content_length = content_length;
  head.more = fields;
  if (tunnel)
    ex_.start_tunnel(head);
  else
    ex_.send_head(head);
}

void ProxiedExchange::response_began(int status) {
  stop_timer();
  set_state(State::RESPONSE);
  cluster_->outcome(*pool_, status);
  record_.answered(status, metrics::AnsweredBy::UPSTREAM);
  record_.first_byte = ev_time() - phase_at_;
  if (up_ && up_->first_on_connection())
    record_.connect = up_->connect_seconds(); // a fresh connection: its connect is this one's
  cluster_->metrics().first_byte.observe(record_.first_byte);
}

void ProxiedExchange::on_upstream_body(std::string_view data) {
  if (!kept_)
    record_.add_response_bytes(data.size()); // bytes for the client (a kept response's are not)
  if (chain_ && !tunnel_) {
    chain_->response_body(data, false);
  } else if (goodbye_) {
    bool now = false;
    std::string_view part = goodbye_->pass(TunnelGoodbye::TO_CLIENT, data, &now);
    if (!part.empty())
      ex_.send_body(part);
    if (now)
      say_goodbye(TunnelGoodbye::TO_CLIENT);
  } else {
    ex_.send_body(data);
  }
  maybe_pause_upstream();
}

void ProxiedExchange::maybe_resume_upstream() {
  if (upstream_paused_ && up_ && (closed_ ? kept_ : !ex_.above_high_watermark()) &&
      !(chain_ && chain_->response_high())) {
    upstream_paused_ = false;
    up_->resume_reading();
  }
}

void ProxiedExchange::on_response_writable(server::Exchange&) {
  maybe_resume_upstream();
  if (chain_)
    chain_->response_writable(); // a filter's own body (a static file) goes on
}

void ProxiedExchange::on_upstream_trailer(std::string_view name, std::string_view value) {
  if (kept_) {
    kept_trailers_ = true; // the filters keeping the response hear of them at its end
    return;
  }
  // The upstream connection's arena is reset when it is handed to the next request, which
  // can happen before on_upstream_end: keep copies in the client exchange's arena.
  if (!upstream::is_hop_by_hop(name) && name != "content-length")
    response_trailers_.push_back({ex_.arena().copy(name), ex_.arena().copy(value)});
}

void ProxiedExchange::on_upstream_end() {
  set_state(State::FINISHED);
  up_ = nullptr;
  // A client held back while its body waited for the upstream is read again: what it still
  // sends is dropped, and the request after it must be read.
  hold_client(kHeldByUpstream, false);
  cluster_->metrics().upstream.observe(ev_time() - phase_at_);
  // Each may close the exchange (this is then disposed of, not yet destroyed).
  if (chain_ && !tunnel_) {
    if (response_trailers_.empty() && !kept_trailers_)
      chain_->response_body({}, true);
    else
      chain_->response_trailers(response_trailers_);
  } else if (response_trailers_.empty()) {
    ex_.end_response();
  } else {
    ex_.end_response_with_trailers(response_trailers_);
  }
}

void ProxiedExchange::on_upstream_error(upstream::UpstreamError e, upstream::Delivery delivery) {
  up_ = nullptr;
  if (kept_) {
    log_kept_failure(cluster_->config().name,
                     pool_ ? std::string_view(pool_->endpoint().text) : std::string_view(),
                     upstream::to_string(e));
    chain_kept_over(); // the filters keeping the response hear it cut short
    return;
  }
  if (state_ == State::RESPONSE) {
    set_state(State::FINISHED);
    log_failure(0, upstream::to_string(e));
    ex_.abort(); // the client must see a cut response, never a clean short one
    return;
  }
  if (e != upstream::UpstreamError::LOCAL_RESOURCES) // the proxy's shortage, not the endpoint's
    cluster_->outcome(*pool_, 0);
  primary_failed(e, delivery, upstream::to_string(e));
}

void ProxiedExchange::fail(int status, std::string_view body,
                           std::span<const http::Header> fields) {
  stop_timer();
  if (state_ != State::FINISHED)
    set_state(State::FINISHED);
  record_.answered(status, metrics::AnsweredBy::PROXY);
  hold_client(kHeldByUpstream, false); // what the client still sends is dropped
  http::ReasonBody reason_body(status);
  if (body.empty())
    body = reason_body.view();
  // Each may close the exchange.
  if (chain_)
    chain_->local_reply(LocalReply{status, "text/plain", body, fields});
  else
    ex_.respond(status, "text/plain", body, fields);
}

void ProxiedExchange::log_failure(int status, const char* what) const {
  log_request_failure(ex_, cluster_ ? std::string_view(cluster_->config().name) : "",
                      pool_ ? std::string_view(pool_->endpoint().text) : "", status, what);
}

void ProxiedExchange::on_exchange_close(server::Exchange& ex) {
  closed_ = true;
  // The client went while the response came, and a filter wants the rest (a cache storing
  // it, for the requests waiting on it): the upstream is read on, to its end, for it.
  // Only a whole request's: one still sending its body leaves the upstream waiting for it.
  bool keep = ctx_.kept && ctx_.kept->size() < kMaxKept && state_ == State::RESPONSE && up_ &&
              request_ended_ && !tunnel_ && chain_ && chain_->keep_response();
  if (chain_ && !keep)
    chain_->close();
  record_.close(ex, pool_ ? std::string_view(pool_->endpoint().text) : std::string_view(), retries_,
                options_.cache_status, options_.limit);
  if (keep) {
    kept_ = true;
    ctx_.kept->push_back(this);
    maybe_resume_upstream(); // no client to wait for now
    return;
  }
  stop_upstream();
  // Destroyed after the callback that closed the exchange has returned: the upstream side or
  // the client exchange may be below us on the stack.
  ctx_.deferred->dispose(this);
}

void ProxiedExchange::chain_kept_over() {
  if (!kept_)
    return;
  kept_ = false;
  ctx_.kept->erase(this);
  if (state_ != State::FINISHED)
    set_state(State::FINISHED);
  if (up_) {
    up_->detach(); // cut short: the connection is not reused
    up_ = nullptr;
  }
  chain_->close();
  ctx_.deferred->dispose(this);
}

} // namespace portico::routing
