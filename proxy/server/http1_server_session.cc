#include "server/http1_server_session.h"

#include "core/error_log.h"
#include "core/http_date.h"
#include "http/http1_writer.h"
#include "server/client_connection.h"
#include "server/h2c_upgrade.h"
#include "server/server_context.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace portico::server {

using http::append_decimal;

// ---- Http1Exchange: the response side, written straight into the connection's output ----

void Http1Exchange::reset(struct ev_loop* loop) {
  loop_ = loop;
  listener_ = nullptr;
  head_sent_ = response_ended_ = request_ended_ = false;
  response_status_ = 0;
  body_bytes_sent_ = 0; // each request's own, not the connection's so far
  chunked_ = no_body_ = false;
}

void Http1Exchange::send_head(const http::ResponseHead& head) {
  if (head_sent_)
    return;
  head_sent_ = true;
  response_status_ = head.status;
  session_.write_head(head);
}

void Http1Exchange::send_body(std::string_view data) {
  if (!head_sent_ || response_ended_ || no_body_ || data.empty())
    return;
  auto& out = session_.conn_.output();
  auto& ctx = session_.conn_.context();
  if (out.size() + data.size() > ctx.limits().max_buffered_response_bytes) {
    // A producer that ignored the watermarks: the response is cut, not grown without bound.
    ctx.stats().buffer_limit_aborts.inc();
    core::log::write(core::log::Level::WARN, core::log::Kind::LIMIT,
                     "a response above max_buffered_response_bytes (%zu) was cut",
                     ctx.limits().max_buffered_response_bytes);
    session_.conn_.close_soon();
    return;
  }
  if (chunked_)
    http::append_chunk(out, data);
  else
    out.append(data); // raw in a tunnel too
  body_bytes_sent_ += data.size();
  session_.conn_.want_flush();
}

void Http1Exchange::end_response() {
  end_response_with_trailers({});
}

void Http1Exchange::end_response_with_trailers(std::span<const http::Header> trailers) {
  if (!head_sent_ || response_ended_)
    return;
  response_ended_ = true;
  if (session_.state_ == Http1ServerSession::State::TUNNEL) {
    session_.finish_exchange(); // the upstream ended its side: the connection closes
    return;
  }
  // Written before the exchange can close: the trailers may belong to the listener.
  if (chunked_)
    http::append_last_chunk(session_.conn_.output(), trailers);
  session_.conn_.want_flush();
  // A connection that will not be kept has no use for the rest of a request body: waiting for
  // it would let a client that never sends it (told its body is refused) hold the connection
  // for ever. Closing lingers, so the client still reads this response.
  if (request_ended_ || !session_.keep_alive_)
    session_.finish_exchange();
}

void Http1Exchange::start_tunnel(const http::ResponseHead& head) {
  if (head_sent_ || head.status != 101 || !request_.is_websocket_upgrade()) {
    send_head(head); // not a tunnel after all: an ordinary response
    return;
  }
  head_sent_ = true;
  response_status_ = 101;
  session_.start_tunnel(head);
}

void Http1Exchange::socket_addresses(sockaddr_storage& peer, sockaddr_storage& local) const {
  session_.conn_.socket_addresses(peer, local);
}

size_t Http1Exchange::buffered() const {
  return session_.conn_.output_pending();
}

bool Http1Exchange::send_file(int fd, int64_t offset, int64_t length) {
  // Only a body the head framed by its length goes raw onto the socket.
  if (!head_sent_ || response_ended_ || no_body_ || chunked_ ||
      session_.state_ == Http1ServerSession::State::TUNNEL ||
      !session_.conn_.send_file(fd, offset, length))
    return false;
  body_bytes_sent_ += static_cast<uint64_t>(length);
  return true;
}

void Http1Exchange::pause_request_body() {
  session_.conn_.pause_reading();
}
void Http1Exchange::resume_request_body() {
  session_.conn_.resume_reading();
}
void Http1Exchange::abort() {
  // Mid-response (an upstream that died, a filter that failed): only a close tells the client,
  // after what it was already sent, never instead of it.
  session_.conn_.cut_after_flush();
}

// ---- Http1ServerSession: its states ----

const char* to_string(Http1ServerSession::State s) {
  using enum Http1ServerSession::State;
  switch (s) {
  case IDLE: return "IDLE";
  case HEAD: return "HEAD";
  case REQUEST: return "REQUEST";
  case RESPONSE: return "RESPONSE";
  case OUTPUT_FULL: return "OUTPUT_FULL";
  case UPGRADED: return "UPGRADED";
  case TUNNEL: return "TUNNEL";
  case CLOSING: return "CLOSING";
  case CLOSED: return "CLOSED";
  }
  return "?";
}

namespace {

// The transitions drawn above the enum in the header.
[[maybe_unused]] bool legal(Http1ServerSession::State from, Http1ServerSession::State to) {
  using enum Http1ServerSession::State;
  if (to == CLOSED)
    return from != CLOSED;
  if (to == CLOSING)
    return from == IDLE || from == HEAD || from == REQUEST || from == RESPONSE ||
           from == OUTPUT_FULL || from == TUNNEL;
  switch (from) {
  case IDLE: return to == HEAD || to == REQUEST || to == OUTPUT_FULL;
  case HEAD: return to == REQUEST;
  case REQUEST: return to == RESPONSE || to == IDLE || to == UPGRADED || to == TUNNEL;
  case RESPONSE: return to == IDLE || to == TUNNEL;
  case OUTPUT_FULL: return to == IDLE;
  case UPGRADED:
  case TUNNEL:
  case CLOSING:
  case CLOSED: return false;
  }
  return false;
}

} // namespace

void Http1ServerSession::set_state(State next) {
#ifndef NDEBUG
  if (!legal(state_, next)) {
    std::fprintf(stderr, "Http1ServerSession: no transition from %s to %s\n", to_string(state_),
                 to_string(next));
    std::abort();
  }
#endif
  state_ = next;
}

// ---- Http1ServerSession ----

Http1ServerSession::Http1ServerSession(ClientConnection& conn)
    : conn_(conn), ex_(*this),
      parser_(*this, ex_.request_, ex_.arena_, conn.context().limits().parser) {}

Http1ServerSession::~Http1ServerSession() = default;

size_t Http1ServerSession::on_input(const char* data, size_t len) {
  if (state_ == State::UPGRADED)
    return 0;
  if (state_ == State::TUNNEL) {
    // The client's bytes, as they are (pause_request_body stops the reads that bring more).
    if (ex_.listener_ && !ex_.request_ended_ && len > 0)
      ex_.listener_->on_request_body(ex_, {data, len});
    return len;
  }
  size_t used = 0;
  in_input_ = true;
  head_seen_ = false;
  bool idle_before = state_ == State::IDLE; // (not the tail of a body, answered at once)
  while (used < len && state_ != State::UPGRADED && !conn_.closing()) {
    if (parser_.paused()) {
      if (in_exchange())
        break; // the response to the previous request is not finished: this one waits
      // A client that pipelines and does not read would grow the output without bound: the
      // next request waits (and so, once the input block is full, does reading) until the
      // responses queued so far drain.
      if (conn_.output_pending() > Exchange::kHighWatermark) {
        if (state_ == State::IDLE)
          set_state(State::OUTPUT_FULL);
        break;
      }
      if (state_ == State::OUTPUT_FULL)
        set_state(State::IDLE);
      parser_.resume();
    }
    used += parser_.feed(data + used, len - used);
    if (parser_.failed()) {
      send_error(http::parse_error_status(parser_.error()));
      used = len;
      break;
    }
  }
  in_input_ = false;
  // No callback tells where a request head begins: the parser has begun one if it is no
  // longer between requests.
  if (state_ == State::IDLE && !parser_.idle())
    set_state(State::HEAD);
  // Empty lines before a request line (RFC 9112 2.2) leave the parser between requests, but
  // they are the head's first bytes all the same: else a CRLF now and then would hold the
  // connection past both header_timeout and keepalive_timeout.
  bool head_bytes =
      state_ == State::HEAD || (idle_before && state_ == State::IDLE && used > 0 && !head_seen_);
  if (!head_bytes)
    head_started_ = 0;
  else if (head_started_ == 0)
    head_started_ = ev_now(conn_.loop()); // header_timeout runs from here, however it trickles
  // After the client's EOF, input that no exchange is left to take is a truncated request.
  if (peer_eof_ && !in_exchange() && used == len && !conn_.closing()) {
    if (state_ != State::UPGRADED) // else the HTTP/2 session's connection closes all the same
      set_state(State::CLOSING);
    conn_.close_after_flush(false);
  }
  return used;
}

void Http1ServerSession::on_request_head(http::RequestHead& head) {
  set_state(State::REQUEST);
  head_started_ = 0;
  head_seen_ = true;
  ex_.reset(conn_.loop());
  ex_.client_address_ = conn_.peer_address();
  ex_.over_tls_ = conn_.is_tls();
  ex_.listener_index_ = conn_.listener();
  if (conn_.is_tls())
    head.scheme = "https";
  auto& ctx = conn_.context();
  if (try_upgrade_h2c(head))
    return; // counted as the HTTP/2 session's stream 1
  ctx.stats().requests.inc();
  continue_pending_ =
      head.expect_continue && head.version == http::Version::HTTP_1_1 && head.has_body();
  ex_.handler_ = &ctx.handler();
  ctx.handler().on_request(ex_);
  if (continue_pending_ && !ex_.head_sent())
    send_continue();
}

void Http1ServerSession::send_continue() {
  continue_pending_ = false;
  conn_.output().append("HTTP/1.1 100 Continue\r\n\r\n");
  conn_.want_flush();
}

void Http1ServerSession::on_request_body(std::string_view data) {
  // Once the response is complete the rest of the body is read and dropped.
  if (state_ == State::REQUEST && !ex_.response_ended_ && ex_.listener_)
    ex_.listener_->on_request_body(ex_, data);
}

void Http1ServerSession::on_request_trailers(std::span<const http::Header> trailers) {
  if (state_ == State::REQUEST && !ex_.response_ended_ && ex_.listener_)
    ex_.listener_->on_request_trailers(ex_, trailers);
}

void Http1ServerSession::on_request_end() {
  // Otherwise the exchange is over already (closed with its connection), or HTTP/2's.
  if (state_ != State::REQUEST)
    return;
  ex_.request_ended_ = true;
  if (ex_.response_ended_) {
    finish_exchange();
    return;
  }
  set_state(State::RESPONSE);
  if (ex_.listener_)
    ex_.listener_->on_request_end(ex_);
}

void Http1ServerSession::finish_exchange() {
  // A handler without a listener, answering in the iteration its connection closed in: the
  // exchange is gone with the connection.
  if (state_ == State::CLOSED)
    return;
  if (state_ == State::TUNNEL) {
    // A tunnel is the connection's last exchange: it closes once our bytes are out (what the
    // client still sends is read and dropped meanwhile).
    set_state(State::CLOSING);
    if (ex_.listener_) {
      auto* l = ex_.listener_;
      ex_.listener_ = nullptr;
      l->on_exchange_close(ex_);
    }
    if (state_ != State::CLOSED)
      conn_.close_after_flush(true);
    return;
  }
  set_state(State::IDLE);
  if (ex_.listener_) {
    auto* l = ex_.listener_;
    ex_.listener_ = nullptr;
    l->on_exchange_close(ex_);
    if (state_ == State::CLOSED)
      return; // the listener closed the connection
  }
  conn_.touch();
  if (!keep_alive_ || draining_ || conn_.context().draining()) {
    // Input may be left unread (a body we did not wait for, a pipelined request a drain will
    // not serve): linger so the client reads the response before the reset.
    set_state(State::CLOSING);
    conn_.close_after_flush(true);
    return;
  }
  if (in_input_)
    return; // on_input goes on with the next pipelined request
  if (peer_eof_ && !conn_.input_buffered()) {
    set_state(State::CLOSING); // the client sent its last request
    conn_.close_after_flush(false);
  } else
    conn_.want_input(); // a pipelined request may be waiting in the buffer
}

void Http1ServerSession::write_head(const http::ResponseHead& head) {
  const auto& req = ex_.request_;
  auto& out = conn_.output();
  auto& ctx = conn_.context();
  bool http10 = req.version == http::Version::HTTP_1_0;
  ex_.no_body_ = req.is_head() || http::status_has_no_body(head.status);
  bool length_known = head.content_length >= 0 || ex_.no_body_;
  ex_.chunked_ = !length_known && !http10;
  // A client that shut its write side may still have pipelined requests here: its EOF closes
  // the connection after the last of them (finish_exchange), not after this one.
  keep_alive_ = req.keep_alive && !draining_ && !ctx.draining() && (length_known || ex_.chunked_);
  // A response sent before the request body was read leaves bytes we would have to drop;
  // past that, closing is cheaper than draining an unknown amount.
  if (!ex_.request_ended_ && (req.chunked || req.content_length > (1 << 20)))
    keep_alive_ = false;
  // A client waiting for "100 Continue" sends its body only after one. A success sent before
  // the body means the handler streams it (echo): invite the body first. Anything else
  // refuses it, and the connection cannot carry on with a body that may or may not follow.
  if (continue_pending_) {
    if (head.status < 300)
      send_continue();
    else
      keep_alive_ = false;
  }

  out.append(http10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  append_decimal(out, static_cast<uint64_t>(head.status));
  out.append(" ");
  out.append(http::reason_phrase(head.status));
  out.append("\r\nserver: ");
  out.append(ctx.limits().server_name);
  out.append("\r\ndate: ");
  out.append(head.date.empty() ? core::http_date_now() : head.date);
  out.append("\r\n");
  if (conn_.is_tls())
    if (std::string_view alt = ctx.limits().alt_svc_for(conn_.listener(), head); !alt.empty())
      http::append_field(out, "alt-svc", alt);
  head.for_each([&](const http::Header& h) { http::append_field(out, h.name, h.value); });
  if (head.content_length >= 0 && !(http::status_has_no_body(head.status))) {
    out.append("content-length: ");
    append_decimal(out, static_cast<uint64_t>(head.content_length));
    out.append("\r\n");
  } else if (ex_.chunked_) {
    out.append("transfer-encoding: chunked\r\n");
  }
  if (!keep_alive_)
    out.append("connection: close\r\n");
  else if (http10)
    out.append("connection: keep-alive\r\n");
  out.append("\r\n");
  conn_.want_flush();
}

void Http1ServerSession::send_error(int status) {
  // A listener closed the connection inside this parse: nobody is left to answer. Or the
  // last response is out and the connection closes after it: what the client sent past that
  // (the rest of a body no one waits for) is dropped, not answered.
  if (state_ == State::CLOSED || state_ == State::CLOSING)
    return;
  bool exchange = in_exchange();
  if (exchange && ex_.head_sent() && !ex_.response_ended_) {
    conn_.close_now(); // mid-response: only a close tells the client
    return;
  }
  // The handler answered in full before the bad part of the body: that answer stands.
  bool answered = exchange && ex_.response_ended_;
  set_state(State::CLOSING);
  if (!exchange) {
    // Refused before the handler saw it: the exchange stands for it (what the parser took
    // of its head) only to be counted and logged.
    ex_.reset(conn_.loop());
    ex_.client_address_ = conn_.peer_address();
    ex_.over_tls_ = conn_.is_tls();
    ex_.listener_index_ = conn_.listener();
  }
  std::string_view reason = http::reason_phrase(status);
  if (!answered) {
    // What the client is about to get, for the accounting of whoever follows the exchange.
    ex_.response_status_ = status;
    ex_.body_bytes_sent_ = reason.size() + 1;
  }
  if (exchange && ex_.listener_) {
    auto* l = ex_.listener_;
    ex_.listener_ = nullptr;
    l->on_exchange_close(ex_);
  }
  if (answered) {
    conn_.close_after_flush(true);
    return;
  }
  auto& out = conn_.output();
  out.append("HTTP/1.1 ");
  append_decimal(out, static_cast<uint64_t>(status));
  out.append(" ");
  out.append(reason);
  out.append("\r\nserver: ");
  out.append(conn_.context().limits().server_name);
  out.append("\r\ndate: ");
  out.append(core::http_date_now());
  out.append("\r\ncontent-type: text/plain\r\ncontent-length: ");
  append_decimal(out, reason.size() + 1);
  out.append("\r\nconnection: close\r\n\r\n");
  out.append(reason);
  out.append("\n");
  conn_.close_after_flush(true);
  if (!exchange)
    conn_.context().handler().on_refused(ex_, status);
}

bool Http1ServerSession::try_upgrade_h2c(const http::RequestHead& head) {
  // h2c is cleartext only (RFC 9113 3.1): over TLS, ALPN is the way to HTTP/2.
  if (head.version != http::Version::HTTP_1_1 || head.has_body() || draining_ ||
      conn_.context().draining() || conn_.is_tls())
    return false;
  const http::Header* upgrade = head.find("upgrade");
  const http::Header* connection = head.find("connection");
  const http::Header* settings = nullptr;
  int settings_count = 0;
  for (const auto& h : head.headers)
    if (h.name == "http2-settings") {
      settings = &h;
      ++settings_count;
    }
  if (!upgrade || !connection || settings_count != 1 ||
      !http::list_contains(upgrade->value, "h2c") ||
      !http::list_contains(connection->value, "upgrade") ||
      !http::list_contains(connection->value, "http2-settings"))
    return false;
  UpgradeToH2 up;
  up.head = &head;
  if (!decode_http2_settings(settings->value, up.settings))
    return false;
  conn_.output().append("HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\n"
                        "upgrade: h2c\r\n\r\n");
  conn_.want_flush();
  set_state(State::UPGRADED);
  conn_.upgrade_to_h2(up);
  return true;
}

void Http1ServerSession::start_tunnel(const http::ResponseHead& head) {
  // What the handler's 101 says, and the upgrade fields of our own hop (RFC 9110 7.8).
  auto& out = conn_.output();
  out.append("HTTP/1.1 101 Switching Protocols\r\nserver: ");
  out.append(conn_.context().limits().server_name);
  out.append("\r\ndate: ");
  out.append(core::http_date_now());
  out.append("\r\n");
  head.for_each([&](const http::Header& h) { http::append_field(out, h.name, h.value); });
  out.append("connection: upgrade\r\nupgrade: websocket\r\n\r\n");
  conn_.want_flush();
  keep_alive_ = false;
  // The handshake request ended with its head; from here the request side is the client's
  // bytes, ended by its EOF.
  ex_.request_ended_ = false;
  set_state(State::TUNNEL);
  conn_.want_input(); // bytes the client sent right after its handshake wait in the buffer
  if (peer_eof_ && ex_.listener_) {
    // The client shut its side while the handshake was under way: the tunnel starts half
    // closed, and the upstream hears so.
    ex_.request_ended_ = true;
    ex_.listener_->on_request_end(ex_);
  }
}

void Http1ServerSession::on_eof() {
  peer_eof_ = true;
  if (state_ == State::TUNNEL) {
    // The client is done sending; what comes back still goes out until the upstream ends.
    if (!ex_.request_ended_) {
      ex_.request_ended_ = true;
      if (ex_.listener_)
        ex_.listener_->on_request_end(ex_);
    }
    if (ex_.response_ended_)
      conn_.close_after_flush(false);
    return;
  }
  if (state_ == State::OUTPUT_FULL)
    return; // a pipelined request waits in the input: answered once the client reads, then
            // the connection closes
  if (!in_exchange()) {
    // Between requests, or a truncated head: nothing more to answer.
    set_state(State::CLOSING);
    conn_.close_after_flush(false);
  } else if (!ex_.request_ended_) {
    // The request body can never complete now, so neither can the exchange: a complete
    // response still goes out (the exchange stays open until the connection closes),
    // anything else is aborted.
    if (ex_.response_ended_)
      conn_.close_after_flush(false);
    else
      conn_.close_now();
  }
  // Otherwise the response in progress finishes first (a half-closed client still reads).
}

bool Http1ServerSession::answered_before_body_end() const {
  return state_ == State::REQUEST && ex_.response_ended_ && !ex_.request_ended_;
}

void Http1ServerSession::on_timeout() {
  if (in_exchange() && !answered_before_body_end())
    return; // the handler owns the pace of a running exchange
  if (state_ == State::HEAD)
    send_error(408);
  else if (conn_.output_pending() > 0)
    // Keep-alive expiry (or a drain's) while the last answer still waits for a client that
    // reads slowly: no more requests, but the answer is whole; send_timeout bounds the wait.
    conn_.close_after_flush(false);
  else
    conn_.close_now(); // keep-alive expiry
}

void Http1ServerSession::drain() {
  draining_ = true;
  // Busy: the response in progress says "Connection: close". Idle: a request may be on its
  // way; it gets the same answer if it comes soon, and the connection closes if not.
  if (state_ == State::IDLE || state_ == State::OUTPUT_FULL)
    conn_.expire_idle_within(conn_.context().limits().drain_idle_grace);
}

void Http1ServerSession::goodbye() {
  if (state_ == State::TUNNEL && ex_.listener_)
    ex_.listener_->on_goodbye(ex_);
}

void Http1ServerSession::on_close() {
  bool exchange = in_exchange();
  set_state(State::CLOSED);
  if (exchange && ex_.listener_) {
    auto* l = ex_.listener_;
    ex_.listener_ = nullptr;
    l->on_exchange_close(ex_);
  }
}

void Http1ServerSession::on_output_drained() {
  if (state_ == State::OUTPUT_FULL) {
    set_state(State::IDLE);
    conn_.want_input();
  }
  if (in_exchange() && ex_.listener_ && ex_.head_sent_ && !ex_.response_ended_)
    ex_.listener_->on_response_writable(ex_);
}

} // namespace portico::server
