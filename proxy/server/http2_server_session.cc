#include "server/http2_server_session.h"

#include "core/small_allocator.h"
#include "http/framed_field.h"
#include "http/nghttp2_check.h"
#include "server/client_connection.h"
#include "server/framed_request_limits.h"
#include "server/http2_exchange.h"
#include "server/server_context.h"

namespace portico::server {

namespace {

constexpr int32_t kStreamWindow = 1 << 20;
constexpr int32_t kConnectionWindow = 16 << 20;
constexpr size_t kEncoderTable = 1024;
// Stop framing when this much waits for the socket; on_output_drained resumes.
constexpr size_t kOutputHigh = 256 * 1024;

// Hop-by-hop fields of an upgraded HTTP/1.1 request that have no place on stream 1.
bool is_connection_specific(std::string_view name) {
  return name == "connection" || name == "upgrade" || name == "http2-settings" ||
         name == "keep-alive" || name == "proxy-connection" || name == "transfer-encoding" ||
         name == "te" || name == "host";
}

} // namespace

const nghttp2_session_callbacks* Http2ServerSession::callbacks() {
  static nghttp2_session_callbacks* cbs = [] {
    nghttp2_session_callbacks* c;
    PORTICO_NGHTTP2_MUST(nghttp2_session_callbacks_new(&c));
    nghttp2_session_callbacks_set_on_begin_frame_callback(c, on_begin_frame);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(c, on_invalid_frame_recv);
    nghttp2_session_callbacks_set_on_begin_headers_callback(c, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(c, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(c, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, on_data_chunk_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(c, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(c, on_frame_send);
    nghttp2_session_callbacks_set_send_data_callback(c, send_data);
    return c;
  }();
  return cbs;
}

void Http2ServerSession::new_session() {
  nghttp2_option* opt;
  PORTICO_NGHTTP2_MUST(nghttp2_option_new(&opt));
  nghttp2_option_set_no_auto_window_update(opt, 1);
  // nghttp2's own flood limits, stated rather than inherited: rapid reset (a token bucket of
  // RST_STREAM frames), CONTINUATION floods, oversized SETTINGS. Each ends in GOAWAY.
  nghttp2_option_set_stream_reset_rate_limit(opt, 1000, 33);
  nghttp2_option_set_max_continuations(opt, 8);
  nghttp2_option_set_max_settings(opt, 32);
  // A closed stream is freed at once. nghttp2 would otherwise keep up to
  // max_concurrent_streams of them per connection for RFC 7540's priority tree, which RFC 9113
  // deprecates: a few hundred bytes each on a used connection, and a fuller stream map to
  // probe. A PRIORITY naming one then gets the default priority (RFC 7540 5.3.4).
  nghttp2_option_set_no_closed_streams(opt, 1);
  // Our HPACK encoder keeps at most kEncoderTable bytes (HPACK's measure; a client allows
  // 4,096). Response fields whose values change are indexed too (Date once a second, request
  // ids), and nghttp2 holds each entry in about five times its HPACK size: a busy connection
  // that lives for minutes filled 4,096 with some 60 of them, 19 KiB. 1 KiB holds a response's
  // constant fields; a new value pushes out the oldest, so those come back once a second at
  // most, not once a response.
  nghttp2_option_set_max_deflate_dynamic_table_size(opt, kEncoderTable);
  // Requests are judged by H2RequestRules as their fields arrive (http/h2_request_rules.h):
  // the same verdicts as nghttp2's own pass, at a fraction of its cost.
  nghttp2_option_set_no_http_messaging(opt, 1);
  PORTICO_NGHTTP2_MUST(nghttp2_session_server_new3(&session_, callbacks(), this, opt,
                                                   core::SmallAllocator::nghttp2_allocator()));
  nghttp2_option_del(opt);
}

Http2ServerSession::Http2ServerSession(ClientConnection& conn, const UpgradeToH2* up)
    : conn_(conn) {
  new_session();
  if (up) {
    prelude_kept_ = false; // stream 1 is open from the start
    const auto& h = *up->head;
    if (nghttp2_session_upgrade2(session_, reinterpret_cast<const uint8_t*>(up->settings.data()),
                                 up->settings.size(), h.is_head(), nullptr) != 0) {
      set_lifecycle(Lifecycle::FAILED);
      return;
    }
    Http2Exchange* st = Http2Exchange::acquire(*this, 1);
    stream_ids_.opened_by_upgrade();
    PORTICO_NGHTTP2_MUST(nghttp2_session_set_stream_user_data(session_, 1, st));
    link(st);
    auto& a = st->arena_;
    auto& r = st->request_;
    r.method = a.copy(h.method);
    r.target = a.copy(h.target);
    r.authority = a.copy(h.authority);
    r.scheme = "http";
    for (const auto& f : h.headers)
      if (!is_connection_specific(f.name))
        r.headers.push_back({a.copy(f.name), a.copy(f.value)});
    upgraded_stream_ = st;
  }
  send_settings();
}

Http2ServerSession::~Http2ServerSession() {
  on_close();
  if (session_)
    nghttp2_session_del(session_);
  else
    conn_.context().stats().h2_dormant_left.inc(); // closed in its sleep
}

void Http2ServerSession::send_settings() {
  const auto& limits = conn_.context().limits();
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits.h2_max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
      // RFC 8441: WebSocket over HTTP/2 as an extended CONNECT (:protocol), which the request
      // rules take once this is sent (always: every field is judged with connect_protocol).
      {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},
  };
  PORTICO_NGHTTP2_MUST(nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv, std::size(iv)));
  PORTICO_NGHTTP2_MUST(
      nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow));
  want_write();
}

void Http2ServerSession::link(Http2Exchange* st) {
  streams_.push_front(st);
  conn_.context().stats().h2_streams_opened.inc();
}

void Http2ServerSession::unlink(Http2Exchange* st) {
  streams_.erase(st);
  conn_.context().stats().h2_streams_closed.inc();
}

void Http2ServerSession::on_activate() {
  if (lifecycle_ == Lifecycle::FAILED) {
    conn_.close_now();
    return;
  }
  if (Http2Exchange* st = upgraded_stream_) {
    upgraded_stream_ = nullptr;
    dispatch(*st);
    if (stream_of(session_, 1) == st)
      request_ended(*st);
  }
}

void Http2ServerSession::want_write() {
  conn_.want_flush();
}

void Http2ServerSession::fail() {
  if (lifecycle_ != Lifecycle::FAILED)
    set_lifecycle(Lifecycle::FAILED);
  // Lingering: a client still sending (a flood) would otherwise get a reset that can destroy
  // the GOAWAY saying why before it is read.
  conn_.close_after_flush(true);
}

size_t Http2ServerSession::on_input(const char* data, size_t len) {
  if (lifecycle_ == Lifecycle::FAILED)
    return len;
  if (!session_) {
    wake();
    if (lifecycle_ == Lifecycle::FAILED)
      return len;
  }
  ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(data), len);
  if (rv > 0) {
    keep_prelude(data, static_cast<size_t>(rv));
    frames_in_.consume(data, static_cast<size_t>(rv));
  }
  if (rv < 0) {
    // A GOAWAY before the close, also for a bad client preface (RFC 9113 3.4); where one is
    // queued already (ENHANCE_YOUR_CALM, nghttp2's own) this one is not sent. FLOODED: more
    // PINGs or SETTINGS than 1,000 ACKs waiting to go out, which is no malformed frame.
    PORTICO_NGHTTP2_MUST(nghttp2_session_terminate_session(
        session_, rv == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR));
    fail();
    want_write();
    return len;
  }
  want_write();
  return static_cast<size_t>(rv);
}

void Http2ServerSession::before_flush() {
  if (!session_)
    return; // dormant: nothing to say
  auto& out = conn_.output();
  while (out.size() < kOutputHigh) {
    const uint8_t* p;
    ssize_t n = nghttp2_session_mem_send(session_, &p);
    if (n < 0) {
      conn_.close_now();
      return;
    }
    if (n == 0)
      break;
    out.append(p, static_cast<size_t>(n));
  }
  if (!writable_.empty()) {
    std::vector<Http2Exchange*> ready;
    ready.swap(writable_);
    for (Http2Exchange* st : ready)
      if (st->listener_ && st->session_ == this)
        st->listener_->on_response_writable(*st);
  }
  // Done (GOAWAY both ways, or ours and every stream ended). Lingering: the client's last
  // WINDOW_UPDATEs, unread, would make the close a reset, and a TCP reset destroys the last
  // DATA frames still on their way to it.
  if (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_))
    conn_.close_after_flush(true);
}

void Http2ServerSession::on_output_drained() {
  if (session_ && nghttp2_session_want_write(session_))
    want_write();
}

void Http2ServerSession::on_eof() {
  conn_.close_after_flush(false);
}

void Http2ServerSession::on_timeout() {
  // Streams at work keep the connection; a header block left unfinished does not.
  if (!streams_.empty() && header_block_since_ == 0)
    return;
  if (!session_)
    wake(); // for the GOAWAY
  PORTICO_NGHTTP2_MUST(nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR));
  want_write();
  // Lingering: a request the client sent before it read the GOAWAY, unread, would make the
  // close a reset, which can destroy the GOAWAY and the last-stream-id it tells the client.
  conn_.close_after_flush(true);
}

void Http2ServerSession::on_close() {
  while (Http2Exchange* st = streams_.front()) {
    unlink(st);
    if (auto* l = st->listener_) {
      st->listener_ = nullptr;
      l->on_exchange_close(*st);
    }
    Http2Exchange::release(st);
  }
  header_block_exchange_ = nullptr;
  writable_.clear();
}

void Http2ServerSession::consume(Http2Exchange& st, size_t n) {
  PORTICO_NGHTTP2_MUST(nghttp2_session_consume(session_, st.id_, n));
  want_write();
}

int Http2ServerSession::malformed(Http2Exchange& st, bool invalid_frame) {
  st.malformed_ = true;
  reset_stream(st, NGHTTP2_PROTOCOL_ERROR);
  return invalid_frame ? glitch() : 0;
}

void Http2ServerSession::reset_stream(Http2Exchange& st, uint32_t error_code) {
  PORTICO_NGHTTP2_MUST(nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, st.id_, error_code));
  want_write();
}

void Http2ServerSession::dispatch(Http2Exchange& st) {
  auto& ctx = conn_.context();
  auto& r = st.request_;
  st.loop_ = conn_.loop();
  st.client_address_ = conn_.peer_address();
  st.over_tls_ = conn_.is_tls();
  st.listener_index_ = conn_.listener();
  r.version = http::Version::HTTP_2;
  if (r.scheme.empty())
    r.scheme = "http";
  if (r.authority.empty())
    if (const auto* host = r.find("host"))
      r.authority = host->value;
  ctx.stats().requests.inc();
  if (st.phase_ == Http2Exchange::Phase::TOO_LARGE) {
    refuse_request(st, ctx.handler(), 431);
    return;
  }
  st.set_phase(Http2Exchange::Phase::DISPATCHED);
  // The limits HTTP/1 has, with the same answers.
  if (refuse_framed_request(st, ctx.handler(), r, ctx.limits().parser))
    return;
  st.handler_ = &ctx.handler();
  ctx.handler().on_request(st);
}

void Http2ServerSession::request_ended(Http2Exchange& st) {
  st.request_ended_ = true;
  if (!st.listener_ || st.response_ended_)
    return;
  if (!st.request_trailers_.empty())
    st.listener_->on_request_trailers(st, st.request_trailers_);
  if (st.listener_ && !st.response_ended_)
    st.listener_->on_request_end(st);
}

// ---- nghttp2 callbacks ----

int Http2ServerSession::on_begin_headers(nghttp2_session* s, const nghttp2_frame* f, void* ud) {
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  auto* me = self(ud);
  if (me->replaying_)
    return 0; // the stream that stands for the last one before a sleep: reset at once
  me->prelude_kept_ = false; // the session holds streams (and HPACK state) from now on
  me->sleep_wanted_ = false;
  if (me->table_shrunk_)
    me->submit_table_size(4096); // awake after all: the client may index again
  Http2Exchange* st = Http2Exchange::acquire(*me, f->hd.stream_id);
  PORTICO_NGHTTP2_MUST(nghttp2_session_set_stream_user_data(s, f->hd.stream_id, st));
  me->link(st);
  me->header_block_since_ = ev_now(me->conn_.loop());
  me->header_block_stream_ = f->hd.stream_id;
  me->header_block_exchange_ = st;
  return 0;
}

int Http2ServerSession::on_header(nghttp2_session* s, const nghttp2_frame* f, const uint8_t* name,
                                  size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                                  void* ud) {
  if (f->hd.type != NGHTTP2_HEADERS)
    return 0;
  auto* me = self(ud);
  if (int rv = me->decoded_field(namelen + valuelen + 32); rv != 0)
    return rv;
  Http2Exchange* st = me->stream_of(s, f->hd.stream_id);
  if (!st || st->malformed_)
    return 0;
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (f->headers.cat == NGHTTP2_HCAT_HEADERS) {
    if (!st->rules_.trailer_field(n, v))
      return me->malformed(*st, true);
    if (st->phase_ == Http2Exchange::Phase::TOO_LARGE)
      return 0;
    // Trailers: kept for the listener. Over the limit the request cannot be passed on whole:
    // the stream is reset, never sent on without its trailers (they may carry a checksum or
    // a status).
    st->header_bytes_ += namelen + valuelen + 32;
    if (st->header_bytes_ > me->conn_.context().limits().parser.max_header_bytes)
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    st->request_trailers_.push_back({st->arena_.copy(n), st->arena_.copy(v)});
    return 0;
  }
  if (f->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  if (!st->rules_.header_field(n, v, true))
    return me->malformed(*st, true);
  if (st->phase_ == Http2Exchange::Phase::TOO_LARGE)
    return 0;
  st->header_bytes_ += namelen + valuelen + 32; // RFC 9113 6.5.2's accounting
  if (st->header_bytes_ > me->conn_.context().limits().parser.max_header_bytes) {
    st->set_phase(Http2Exchange::Phase::TOO_LARGE);
    return 0;
  }
  auto& r = st->request_;
  auto& a = st->arena_;
  http::add_framed_field(r, a, n, v);
  return 0;
}

int Http2ServerSession::on_frame_recv(nghttp2_session* s, const nghttp2_frame* f, void* ud) {
  auto* me = self(ud);
  switch (f->hd.type) {
  case NGHTTP2_PING:
    if ((f->hd.flags & NGHTTP2_FLAG_ACK) && me->lifecycle_ == Lifecycle::DRAINING)
      me->send_final_goaway();
    break;
  case NGHTTP2_SETTINGS:
    if ((f->hd.flags & NGHTTP2_FLAG_ACK) && !me->replaying_ && me->settings_unacked_ > 0)
      --me->settings_unacked_;
    break;
  case NGHTTP2_GOAWAY: me->goaway_received_ = true; break;
  case NGHTTP2_RST_STREAM:
    // A stream reset before its response began: the rapid-reset pattern, which turns into
    // upstream work (and upstream connections closed mid-request) for nothing.
    if (Http2Exchange* st = me->stream_of(s, f->hd.stream_id); st && !st->head_sent_)
      return me->glitch();
    break;
  default: break;
  }
  if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
    return 0;
  Http2Exchange* st = me->stream_of(s, f->hd.stream_id);
  if (!st)
    return 0;
  bool end_stream = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
  if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
    me->header_block_since_ = 0;
  if (st->malformed_)
    return 0;
  // A malformed request (RFC 9113 8.1.1) whose fault shows only now, as nghttp2 would judge
  // it: a pseudo-field missing, trailers that do not end the stream, content not as long as
  // its content-length. A header section's fault counts as an invalid frame, as it did there.
  if (f->hd.type == NGHTTP2_HEADERS) {
    bool ok = f->headers.cat == NGHTTP2_HCAT_REQUEST
                  ? st->rules_.header_end()
                  : http::H2RequestRules::trailers_end(end_stream);
    if (!ok || (end_stream && !st->rules_.end()))
      return me->malformed(*st, true);
  } else if (end_stream && !st->rules_.end()) {
    return me->malformed(*st, false);
  }
  if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
    // The handler may ask whether a body follows: a HEADERS with END_STREAM has none.
    if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
      st->request_ended_ = true;
    // A body without content-length runs to END_STREAM: its length is unknown, which is what
    // "chunked" tells a handler (and an HTTP/1 upstream) on this side.
    else if (st->request_.content_length < 0)
      st->request_.chunked = true;
    me->dispatch(*st);
  }
  // The handler may have reset the stream; look it up again.
  if ((f->hd.flags & NGHTTP2_FLAG_END_STREAM) && me->stream_of(s, f->hd.stream_id) == st &&
      st->session_ == me)
    me->request_ended(*st);
  return 0;
}

int Http2ServerSession::on_data_chunk_recv(nghttp2_session* s, uint8_t, int32_t id,
                                           const uint8_t* data, size_t len, void* ud) {
  Http2Exchange* st = self(ud)->stream_of(s, id);
  if (!st) {
    PORTICO_NGHTTP2_MUST(nghttp2_session_consume_connection(s, len));
    return 0;
  }
  // Past its content-length (or in a stream reset as malformed): dropped, and given back to
  // the client's window.
  if (st->malformed_ || !st->rules_.data(len)) {
    PORTICO_NGHTTP2_MUST(nghttp2_session_consume(s, id, len));
    return st->malformed_ ? 0 : self(ud)->malformed(*st, false);
  }
  int64_t max_body = self(ud)->conn_.context().limits().parser.max_body_bytes;
  st->body_received_ += static_cast<int64_t>(len);
  if (max_body >= 0 && st->body_received_ > max_body) {
    // Over the limit, without a content-length that said so: nothing more goes on. 413 while
    // the response has not begun, else the stream is reset (HTTP/1 cuts the connection).
    PORTICO_NGHTTP2_MUST(nghttp2_session_consume(s, id, len));
    if (st->response_ended_)
      return 0;
    if (!st->head_sent_)
      st->respond(413, "text/plain", "Content Too Large\n");
    else
      self(ud)->reset_stream(*st, NGHTTP2_CANCEL);
    return 0;
  }
  if (st->phase_ == Http2Exchange::Phase::DISPATCHED && !st->response_ended_ && st->listener_)
    st->listener_->on_request_body(*st, {reinterpret_cast<const char*>(data), len});
  if (st->paused_)
    st->unconsumed_ += len;
  else
    PORTICO_NGHTTP2_MUST(nghttp2_session_consume(s, id, len));
  return 0;
}

int Http2ServerSession::on_stream_close(nghttp2_session* s, int32_t id, uint32_t, void* ud) {
  Http2Exchange* st = self(ud)->stream_of(s, id);
  if (!st)
    return 0;
  auto* me = self(ud);
  PORTICO_NGHTTP2_MUST(nghttp2_session_set_stream_user_data(s, id, nullptr));
  // Request DATA held back while the stream was paused: the stream's window goes with it, the
  // connection's must come back, or a few such streams leave no window for any upload.
  if (st->unconsumed_ > 0) {
    PORTICO_NGHTTP2_MUST(nghttp2_session_consume_connection(s, st->unconsumed_));
    st->unconsumed_ = 0;
  }
  me->glitches_.stream_closed();
  me->unlink(st);
  // Reset inside its header block (a field HTTP/2 forbids, a block over the limit): nghttp2
  // delivers no END_HEADERS, and the deadline must not outlive the stream and cut the others.
  if (id == me->header_block_stream_)
    me->header_block_since_ = 0;
  if (st == me->header_block_exchange_)
    me->header_block_exchange_ = nullptr;
  if (me->streams_.empty()) {
    me->conn_.touch(); // the keep-alive wait starts now
    me->quiet_since_ = ev_now(me->conn_.loop());
    if (ev_tstamp after = me->conn_.context().limits().h2_sleep_after; after > 0)
      me->conn_.check_within(after);
  }
  std::erase(me->writable_, st);
  if (auto* l = st->listener_) {
    st->listener_ = nullptr;
    l->on_exchange_close(*st);
  }
  Http2Exchange::release(st);
  return 0;
}

int Http2ServerSession::on_frame_send(nghttp2_session* s, const nghttp2_frame* f, void* ud) {
  if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK) && !self(ud)->replaying_)
    ++self(ud)->settings_unacked_;
  if (f->hd.type == NGHTTP2_GOAWAY) {
    size_t reason;
    switch (f->goaway.error_code) {
    case NGHTTP2_NO_ERROR: reason = 0; break;
    case NGHTTP2_PROTOCOL_ERROR: reason = 1; break;
    case NGHTTP2_FLOW_CONTROL_ERROR: reason = 2; break;
    case NGHTTP2_ENHANCE_YOUR_CALM: reason = 3; break;
    default: reason = 4; break;
    }
    self(ud)->conn_.context().stats().h2_goaways[reason].inc();
    return 0;
  }
  if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
      !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
    return 0;
  // The response is complete before the request: tell the client to stop sending.
  Http2Exchange* st = self(ud)->stream_of(s, f->hd.stream_id);
  if (st && !st->request_ended_)
    PORTICO_NGHTTP2_MUST(
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR));
  return 0;
}

} // namespace portico::server
