#include "upstream/http1_upstream_connection.h"

#include "core/proxy_protocol.h"
#include "http/http1_writer.h"
#include "server/exchange.h"
#include "upstream/http1_connection_pool.h"
#include "upstream/upstream_pool.h"

#include <cerrno>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::upstream {

Http1UpstreamConnection::Http1UpstreamConnection(Http1ConnectionPool& conns, int fd, bool connected)
    : UpstreamSocket(conns.owner(), fd), conns_(conns),
      parser_(*this, head_, arena_, pool_.cluster().max_response_header_bytes) {
  connect_started_ = ev_time();
  if (connected && !pool_.tls()) {
    // Done (a unix socket): the first request is written as soon as it is whole (write_now),
    // not a loop pass later with its block held until then.
    on_established();
    return;
  }
  // Writability tells that connect(2) finished, one way or the other.
  ev_io_start(pool_.loop(), &wev_);
  arm_timer(pool_.cluster().connect_timeout);
}

Http1UpstreamConnection::~Http1UpstreamConnection() {
  pool_.deferred().cancel(this);
  if (in_)
    core::BlockPool::local().put(in_);
}

void Http1UpstreamConnection::attach(UpstreamStreamListener* client, bool head_request) {
  client_ = client;
  ++requests_;
  request_ = RequestPhase::SENDING;
  last_progress_ = ev_now(pool_.loop());
  response_ = ResponsePhase::AWAITING;
  tunnel_write_shut_ = false;
  reading_paused_ = false;
  arena_.reset();
  parser_.start(head_request);
  reused_after_idle_ = 0;
  if (state_ == State::IDLE) {
    state_ = State::ACTIVE;
    ev_io_start(pool_.loop(), &rev_);
    last_read_ = ev_now(pool_.loop());
    reused_after_idle_ = last_read_ - idle_since;
    arm_timer(pool_.first_timer_check());
  }
}

void Http1UpstreamConnection::send_head(const http::RequestHead& req, BodyFraming framing,
                                        const ClientOrigin& client, const ForwardingOptions& fwd) {
  framing_ = framing;
  if (framing == BodyFraming::TUNNEL)
    parser_.start(false, true); // a 101 may answer it
  config::ProxyProtocolVersion pp = pool_.cluster().send_proxy_protocol;
  if (pp != config::ProxyProtocolVersion::NONE && requests_ == 1) {
    // The connection's first bytes name the client (such a connection is never pooled); the
    // proxy's own request (a health check) says LOCAL / UNKNOWN.
    sockaddr_storage peer{}, local{};
    if (client.exchange)
      client.exchange->socket_addresses(peer, local);
    out_.append(pp == config::ProxyProtocolVersion::V2
                    ? core::proxy_protocol::encode_v2(peer, local)
                    : core::proxy_protocol::encode_v1(peer, local));
  }
  write_upstream_request_head(out_, req, framing, client, fwd);
  want_flush();
}

void Http1UpstreamConnection::send_body(std::string_view data) {
  last_progress_ = ev_now(pool_.loop());
  if (framing_ == BodyFraming::CHUNKED)
    http::append_chunk(out_, data);
  else
    out_.append(data);
  want_flush();
}

void Http1UpstreamConnection::end_request(std::span<const http::Header> trailers) {
  if (response_ == ResponsePhase::TUNNEL) {
    tunnel_write_shut_ = true; // shut once what is queued has gone (flush)
    want_flush();
    return;
  }
  if (framing_ == BodyFraming::CHUNKED)
    http::append_last_chunk(out_, trailers);
  request_ = RequestPhase::COMPLETE;
  write_now();
  want_flush();
}

void Http1UpstreamConnection::write_now() {
  // The request is whole: nothing later in this pass would join its write. Sent now, its block
  // goes back to the pool for the next connection of the pass, instead of thousands of them
  // (one per busy connection) waiting for the pass's end. What is left, and any error, is the
  // deferred flush's, which reports it outside the caller's stack.
  if (state_ == State::ACTIVE && !out_.empty() && write_out(out_) > 0)
    last_progress_ = ev_now(pool_.loop());
}

void Http1UpstreamConnection::set_tunnel_timeout(double seconds) {
  tunnel_timeout_ = seconds;
  arm_timer(seconds); // the response_timeout armed for the handshake is not the tunnel's
}

void Http1UpstreamConnection::detach() {
  client_ = nullptr;
  close();
}

void Http1UpstreamConnection::want_flush() {
  if (state_ == State::ACTIVE)
    pool_.deferred().add(this);
}

void Http1UpstreamConnection::run_deferred() {
  flush();
}

void Http1UpstreamConnection::flush() {
  if (state_ != State::ACTIVE)
    return;
  bool was_high = out_.size() >= 64 * 1024;
  if (!out_.empty()) {
    ssize_t w = write_out(out_);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      // The upstream went away while we were writing; its response, if any, may still be
      // readable, so only fail if nothing comes (the read side reports EOF or a reset).
      if (errno == EPIPE || errno == ECONNRESET) {
        write_failed_ = true; // never another request on it
        out_.clear();
        ev_io_stop(pool_.loop(), &wev_);
        on_readable();
        return;
      }
      fail(UpstreamError::RESET);
      return;
    }
    if (w > 0)
      last_progress_ = ev_now(pool_.loop()); // a flush the upstream took nothing of is none
  }
  if (out_.empty())
    ev_io_stop(pool_.loop(), &wev_);
  else
    ev_io_start(pool_.loop(), &wev_);
  if (tunnel_write_shut_ && out_.empty()) {
    tunnel_write_shut_ = false;
    if (tls_)
      tls_->shutdown();       // close_notify first: our end of the TLS stream
    ::shutdown(fd_, SHUT_WR); // the WebSocket peer reads our EOF; its own may follow
  }
  if (request_ == RequestPhase::COMPLETE && out_.empty()) {
    // All of it is with the upstream: from now on the wait is for its answer. The timer
    // armed at attach finds the new deadline when it fires (no re-arming per request).
    request_ = RequestPhase::SENT;
    last_read_ = ev_now(pool_.loop());
  }
  if (was_high && out_.size() < 64 * 1024 && client_)
    client_->on_upstream_writable();
}

void Http1UpstreamConnection::on_writable() {
  if (state_ == State::CONNECTING)
    advance();
  else
    flush();
}

void Http1UpstreamConnection::advance() {
  UpstreamError why;
  switch (advance_connect("", &why)) {
  case Connect::ESTABLISHED: on_established(); return;
  case Connect::WAITING: return;
  case Connect::FAILED: fail(why, is_connect_failure(why)); return;
  }
}

void Http1UpstreamConnection::on_established() {
  state_ = State::ACTIVE;
  pool_.note_connected();
  connect_seconds_ = ev_time() - connect_started_;
  pool_.metrics().connect.observe(connect_seconds_);
  ev_io_start(pool_.loop(), &rev_);
  last_read_ = ev_now(pool_.loop());
  arm_timer(pool_.first_timer_check());
  flush();
}

void Http1UpstreamConnection::pause_reading() {
  reading_paused_ = true;
  ev_io_stop(pool_.loop(), &rev_);
}

void Http1UpstreamConnection::resume_reading() {
  if (!reading_paused_ || state_ != State::ACTIVE)
    return;
  reading_paused_ = false;
  last_read_ = ev_now(pool_.loop());
  ev_io_start(pool_.loop(), &rev_);
  // Bytes that arrived before the pause and were not parsed yet, or that OpenSSL decrypted
  // and holds (the socket will not signal those).
  if (in_ && in_->readable() > 0)
    on_readable();
  else
    reread_pending_tls();
}

void Http1UpstreamConnection::release_input() {
  // The parser keeps no view into the block past feed(): an empty one goes back to the pool,
  // so that a connection waiting for its response, or idle in the pool, holds none.
  if (in_ && in_->readable() == 0) {
    core::BlockPool::local().put(in_);
    in_ = nullptr;
  }
}

void Http1UpstreamConnection::reread_pending_tls() {
  if (tls_pending() && state_ == State::ACTIVE && !reading_paused_)
    ev_feed_event(pool_.loop(), &rev_, EV_READ);
}

bool Http1UpstreamConnection::quiet() const {
  if (tls_pending())
    return false;
  char c;
  ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

void Http1UpstreamConnection::on_readable() {
  if (state_ == State::CONNECTING) {
    if (tls_)
      advance(); // the handshake waits for the upstream's reply
    return;
  }
  if (state_ == State::IDLE && tls_) {
    // A TLS record may carry nothing for us (a session ticket); anything else ends it.
    char c;
    size_t n = 0;
    Read r = read_some(&c, 1, &n);
    if (r == Read::WOULD_BLOCK)
      return;
    if (r == Read::END)
      conns_.note_idle_closed(ev_now(pool_.loop()) - idle_since);
    close();
    return;
  }
  if (state_ == State::IDLE) {
    // An idle connection has nothing to say: EOF or stray bytes both end it.
    char c;
    ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    if (n == 0) // the upstream's own idle timeout, most likely: the pool learns it
      conns_.note_idle_closed(ev_now(pool_.loop()) - idle_since);
    close();
    return;
  }
  if (response_ == ResponsePhase::TUNNEL) {
    read_tunnel();
    return;
  }
  for (int i = 0; i < kReadsPerWakeup && state_ == State::ACTIVE && !reading_paused_; ++i) {
    if (!in_)
      in_ = core::BlockPool::local().get();
    if (in_->readable() == 0)
      in_->begin = in_->end = 0;
    if (in_->readable() == 0) {
      size_t n = 0;
      Read r = read_some(in_->data + in_->end, in_->writable(), &n);
      if (r == Read::WOULD_BLOCK) {
        release_input();
        return;
      }
      if (r == Read::FAILED) {
        fail(UpstreamError::RESET);
        return;
      }
      if (r == Read::END) {
        // EOF: completes a close-delimited body, cuts anything else.
        if (parser_.finish() && response_ == ResponsePhase::DONE) {
          head_.keep_alive = false; // close-delimited: the connection is spent
          finish_exchange();
          return;
        }
        fail(UpstreamError::RESET);
        return;
      }
      in_->end += static_cast<uint32_t>(n);
      last_read_ = ev_now(pool_.loop());
    }
    if (response_ == ResponsePhase::AWAITING)
      response_ = ResponsePhase::RECEIVING;
    size_t used = parser_.feed(in_->data + in_->begin, in_->readable());
    in_->begin += static_cast<uint32_t>(used);
    if (state_ != State::ACTIVE)
      return;
    if (parser_.upgraded()) {
      // The 101 went to the client; what followed it in this read is the tunnel's.
      response_ = ResponsePhase::TUNNEL;
      read_tunnel();
      return;
    }
    if (response_ == ResponsePhase::DONE) {
      // Finished here, after the parser returned, so that leftover bytes are known.
      finish_exchange();
      release_input();
      return;
    }
    if (parser_.failed()) {
      fail(UpstreamError::PROTOCOL_ERROR);
      return;
    }
  }
  reread_pending_tls();
}

void Http1UpstreamConnection::read_tunnel() {
  for (int i = 0; i < kReadsPerWakeup && state_ == State::ACTIVE && !reading_paused_; ++i) {
    if (in_ && in_->readable() > 0) {
      std::string_view data(in_->data + in_->begin, in_->readable());
      in_->begin = in_->end = 0;
      if (client_)
        client_->on_upstream_body(data); // the client copies what it takes
      continue;
    }
    if (!in_)
      in_ = core::BlockPool::local().get();
    in_->begin = in_->end = 0;
    size_t n = 0;
    Read r = read_some(in_->data, in_->writable(), &n);
    if (r == Read::WOULD_BLOCK) {
      release_input();
      return;
    }
    if (r == Read::FAILED) {
      fail(UpstreamError::RESET);
      return;
    }
    if (r == Read::END) {
      // The upstream closed its side: so does the client's, once its bytes are out.
      head_.keep_alive = false;
      finish_exchange();
      return;
    }
    in_->end = static_cast<uint32_t>(n);
    last_read_ = ev_now(pool_.loop());
  }
  reread_pending_tls();
}

void Http1UpstreamConnection::on_timer() {
  double now = ev_now(pool_.loop());
  switch (state_) {
  case State::CONNECTING: fail(UpstreamError::CONNECT_TIMEOUT); return;
  case State::ACTIVE: {
    if (response_ == ResponsePhase::TUNNEL) {
      // Idle both ways for upgrade_timeout: closed. A client that does not read is its
      // send_timeout's (reading is paused then), not this.
      double left = std::max(last_progress_, last_read_) + tunnel_timeout_ - now;
      if (reading_paused_ || left > 0.001) {
        arm_timer(reading_paused_ ? tunnel_timeout_ : left);
        return;
      }
      fail(UpstreamError::RESPONSE_TIMEOUT);
      return;
    }
    // A paused read is the client's doing, not the upstream's. While the request is still
    // going up, the limit is on its progress (either side may be slow); response_timeout
    // starts once it has all been written.
    const auto& c = pool_.cluster();
    double left = request_ == RequestPhase::SENT
                      ? last_read_ + c.response_timeout - now
                      : std::max(last_progress_, last_read_) + c.send_timeout - now;
    if (reading_paused_ || left > 0.001) {
      arm_timer(reading_paused_ ? c.response_timeout : left);
      return;
    }
    fail(request_ == RequestPhase::SENT ? UpstreamError::RESPONSE_TIMEOUT
                                        : UpstreamError::SEND_TIMEOUT);
    return;
  }
  case State::IDLE:
  case State::CLOSED: return; // idle expiry is the pool's timer
  }
}

void Http1UpstreamConnection::on_response_head(http::UpstreamResponseHead& head) {
  // A 101 opens the tunnel before the client hears of it: what the client does on hearing it
  // (its side already shut: end_request) is the tunnel's.
  if (parser_.upgraded())
    response_ = ResponsePhase::TUNNEL;
  if (client_)
    client_->on_upstream_head(head);
}

void Http1UpstreamConnection::on_response_body(std::string_view data) {
  if (client_)
    client_->on_upstream_body(data);
}

void Http1UpstreamConnection::on_response_trailer(std::string_view name, std::string_view value) {
  if (client_)
    client_->on_upstream_trailer(name, value);
}

void Http1UpstreamConnection::on_response_end() {
  if (response_ != ResponsePhase::TUNNEL)
    response_ = ResponsePhase::DONE;
}

void Http1UpstreamConnection::finish_exchange() {
  keep_tls_session(); // after a response the server's session ticket has come
  UpstreamStreamListener* c = client_;
  client_ = nullptr;
  // Reusable only when both directions ended cleanly and nothing extra arrived. A bodiless
  // answer (HEAD, 304) that states a body length is where an application that gets it wrong
  // sends that body anyway, in a later write where the next request's response would be
  // read: its framing is in doubt, and a new connection costs less than a wrong answer.
  bool reusable = head_.keep_alive && !head_.body_announced && request_ != RequestPhase::SENDING &&
                  !write_failed_ && out_.empty() && (!in_ || in_->readable() == 0) &&
                  state_ == State::ACTIVE && framing_ != BodyFraming::TUNNEL &&
                  pool_.cluster().send_proxy_protocol ==
                      config::ProxyProtocolVersion::NONE; // one client's connection
  if (reusable && in_) {
    // An idle pooled connection holds no input block; the next response gets one.
    core::BlockPool::local().put(in_);
    in_ = nullptr;
  }
  ev_timer_stop(pool_.loop(), &timer_);
  if (reusable) {
    state_ = State::IDLE;
    reading_paused_ = false;
    ev_io_start(pool_.loop(), &rev_); // watch for the upstream's close while idle
  }
  conns_.release(this, reusable, head_.keepalive_timeout);
  if (c)
    c->on_upstream_end();
}

void Http1UpstreamConnection::fail(UpstreamError e, bool counted) {
  UpstreamStreamListener* c = client_;
  client_ = nullptr;
  bool connect_failed = is_connect_failure(e);
  // A timeout is the application's slowness, not a lost request: never sent again.
  Delivery delivery = connect_failed ? Delivery::NOT_DELIVERED
                      : response_ != ResponsePhase::AWAITING || is_timeout(e)
                          ? Delivery::ANSWERED
                          : Delivery::UNANSWERED;
  if (connect_failed && !counted)
    pool_.note_connect_failed(e);
  // Lost the keep-alive race: the upstream closed a connection idle this long just as it was
  // reused. The pool learns from it as from a close seen while idle.
  if (delivery == Delivery::UNANSWERED && reused_after_idle_ > 0)
    conns_.note_idle_closed(reused_after_idle_);
  if (!counted)
    pool_.metrics().errors[kind_of(e)].inc();
  close();
  if (c)
    c->on_upstream_error(e, delivery);
}

void Http1UpstreamConnection::close() {
  if (state_ == State::CLOSED)
    return;
  state_ = State::CLOSED;
  end_tls(); // close_notify, best effort: the socket closes either way
  close_socket();
  out_.clear();
  conns_.on_closed(this); // disposes of this, its queued flush cancelled
}

const char* to_string(Http1UpstreamConnection::State s) {
  using S = Http1UpstreamConnection::State;
  switch (s) {
  case S::CONNECTING: return "connecting";
  case S::ACTIVE: return "active";
  case S::IDLE: return "idle";
  case S::CLOSED: return "closed";
  }
  return "?";
}

const char* to_string(Http1UpstreamConnection::RequestPhase p) {
  using P = Http1UpstreamConnection::RequestPhase;
  switch (p) {
  case P::SENDING: return "sending";
  case P::COMPLETE: return "complete";
  case P::SENT: return "sent";
  }
  return "?";
}

const char* to_string(Http1UpstreamConnection::ResponsePhase p) {
  using P = Http1UpstreamConnection::ResponsePhase;
  switch (p) {
  case P::AWAITING: return "awaiting";
  case P::RECEIVING: return "receiving";
  case P::DONE: return "done";
  case P::TUNNEL: return "tunnel";
  }
  return "?";
}

} // namespace portico::upstream
