#include "upstream/http2_upstream_connection.h"

#include "http/nghttp2_check.h"
#include "upstream/http2_connection_pool.h"
#include "upstream/upstream_pool.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::upstream {

namespace {

// Response bodies: per stream as much as a client connection buffers, and the connection's
// window large enough that one slow stream does not stall the others.
constexpr int32_t kStreamWindow = 256 * 1024;
constexpr int32_t kConnectionWindow = 16 << 20;
// Stop framing when this much waits for the socket; the write watcher resumes.
constexpr size_t kOutputHigh = 256 * 1024;
// Without a hint, retire a connection with no streams after this long (the upstream's own
// idle timeout is usually longer; portico-backend's is 5 s).
constexpr double kDefaultIdle = 4.0;
// Streams per connection until the server's SETTINGS say (RFC 9113 suggests at least 100).
constexpr uint32_t kInitialStreams = 100;

Http2UpstreamConnection* self(void* user) {
  return static_cast<Http2UpstreamConnection*>(user);
}

} // namespace

// ---- the connection ------------------------------------------------------------------------

const nghttp2_session_callbacks* Http2UpstreamConnection::callbacks() {
  static nghttp2_session_callbacks* cbs = [] {
    nghttp2_session_callbacks* c;
    PORTICO_NGHTTP2_MUST(nghttp2_session_callbacks_new(&c));
    nghttp2_session_callbacks_set_on_begin_headers_callback(c, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(c, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(c, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, on_data_chunk_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(c, on_stream_close);
    return c;
  }();
  return cbs;
}

Http2UpstreamConnection::Http2UpstreamConnection(Http2ConnectionPool& conns, int fd)
    : UpstreamSocket(conns.owner(), fd), conns_(conns) {
  nghttp2_option* opt;
  PORTICO_NGHTTP2_MUST(nghttp2_option_new(&opt));
  nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_option_set_peer_max_concurrent_streams(opt, kInitialStreams);
  PORTICO_NGHTTP2_MUST(nghttp2_session_client_new3(&session_, callbacks(), this, opt,
                                                   core::SmallAllocator::nghttp2_allocator()));
  nghttp2_option_del(opt);
  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                       {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow}};
  PORTICO_NGHTTP2_MUST(
      nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings)));
  PORTICO_NGHTTP2_MUST(
      nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow));
  connect_started_ = ev_time();
  // Writability tells that connect(2) finished, one way or the other.
  ev_io_start(pool_.loop(), &wev_);
  timer_.repeat = pool_.cluster().connect_timeout;
  ev_timer_again(pool_.loop(), &timer_);
}

Http2UpstreamConnection::~Http2UpstreamConnection() {
  pool_.deferred().cancel(this);
  while (Http2UpstreamStream* st = streams_.pop_front())
    delete st;
  nghttp2_session_del(session_);
  if (in_)
    core::BlockPool::local().put(in_);
}

bool Http2UpstreamConnection::can_take() const {
  if (state_ != State::CONNECTING && state_ != State::OPEN)
    return false;
  uint32_t limit =
      nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  return streams_.size() < limit && nghttp2_session_check_request_allowed(session_);
}

void Http2UpstreamConnection::open_stream(UpstreamStreamListener* client) {
  auto* st = new Http2UpstreamStream(*this, client, client->is_head_request(),
                                     completed_ == 0 && streams_.empty());
  streams_.push_front(st);
  if (streams_.size() == 1)
    ev_timer_stop(pool_.loop(), &timer_); // idle retirement, if it was armed
  conns_.stream_opened(streams_.size() == 1);
  client->on_upstream_ready(*st);
}

void Http2UpstreamConnection::stream_gone(Http2UpstreamStream* st) {
  streams_.erase(st);
  ev_timer_stop(pool_.loop(), &st->timer_);
  // Destroyed once nghttp2's callback (or the loop pass) that ended it has returned; the
  // connection itself is disposed of after it, never before.
  pool_.deferred().dispose(st);
  conns_.stream_done(streams_.empty());
  if (streams_.empty() && state_ == State::DRAINING) {
    close(UpstreamError::RESET);
    return;
  }
  if (streams_.empty())
    arm_idle();
}

void Http2UpstreamConnection::arm_idle() {
  if (state_ != State::OPEN)
    return;
  const auto& c = pool_.cluster();
  timer_.repeat = c.idle_timeout > 0 ? c.idle_timeout : kDefaultIdle;
  ev_timer_again(pool_.loop(), &timer_);
}

void Http2UpstreamConnection::want_flush() {
  if (state_ != State::CLOSED)
    pool_.deferred().add(this);
}

void Http2UpstreamConnection::run_deferred() {
  if (has_failed_streams_) {
    has_failed_streams_ = false;
    // Streams nghttp2 never took (refused at submit) or whose client left before they were
    // submitted: the client hears now, from the loop, and may retry elsewhere.
    for (Http2UpstreamStream* st = streams_.front(); st;) {
      Http2UpstreamStream* next = Streams::next(st);
      if (st->id_ < 0) {
        UpstreamStreamListener* c = st->client_;
        st->client_ = nullptr;
        stream_gone(st);
        if (c)
          c->on_upstream_error(UpstreamError::RESET, Delivery::NOT_DELIVERED);
        if (state_ == State::CLOSED)
          return;
      }
      st = next;
    }
  }
  flush();
}

void Http2UpstreamConnection::flush() {
  if ((state_ != State::OPEN && state_ != State::DRAINING) || write_closed_)
    return;
  while (out_.size() < kOutputHigh) {
    const uint8_t* data;
    ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      close(UpstreamError::PROTOCOL_ERROR);
      return;
    }
    if (n == 0)
      break;
    out_.append(data, static_cast<size_t>(n));
  }
  if (!out_.empty()) {
    ssize_t w = write_out(out_);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      write_failed();
      return;
    }
  }
  if (out_.empty() && !nghttp2_session_want_write(session_))
    ev_io_stop(pool_.loop(), &wev_);
  else
    ev_io_start(pool_.loop(), &wev_);
  if (notify_writable_) {
    notify_writable_ = false;
    for (Http2UpstreamStream* st = streams_.front(); st; st = Streams::next(st))
      if (st->client_ && st->body_.size() < Http2UpstreamStream::kBodyHigh)
        st->client_->on_upstream_writable();
  }
  if (state_ == State::DRAINING && streams_.empty() && out_.empty())
    close(UpstreamError::RESET);
}

void Http2UpstreamConnection::write_failed() {
  // An upstream that finished its streams after a GOAWAY closes at once, while its last
  // DATA frames still wait in our socket; the WINDOW_UPDATE for what we consumed then meets
  // EPIPE. Those answers are whole: read them, and fail only what the end of the input
  // leaves unfinished (on_readable's end of stream, or each stream's own timeout).
  write_closed_ = true;
  out_.clear();
  ev_io_stop(pool_.loop(), &wev_);
  if (state_ == State::OPEN)
    state_ = State::DRAINING; // no new streams here
  if (streams_.empty()) {
    close(UpstreamError::RESET);
    return;
  }
  ev_feed_event(pool_.loop(), &rev_, EV_READ);
}

void Http2UpstreamConnection::on_writable() {
  if (state_ == State::CONNECTING)
    advance();
  else
    flush();
}

void Http2UpstreamConnection::on_timer() {
  if (state_ == State::CONNECTING) {
    pool_.note_connect_failed(UpstreamError::CONNECT_TIMEOUT);
    pool_.metrics().errors.connect_timeout().inc();
    close(UpstreamError::CONNECT_TIMEOUT);
  } else if (streams_.empty()) {
    drain(); // idle for too long: retire before the upstream's own timeout
  }
}

void Http2UpstreamConnection::advance() {
  UpstreamError why;
  switch (advance_connect("h2", &why)) {
  case Connect::ESTABLISHED: on_established(); return;
  case Connect::WAITING: return;
  case Connect::FAILED: close(why); return;
  }
}

void Http2UpstreamConnection::on_established() {
  pool_.note_connected();
  state_ = State::OPEN;
  connect_seconds_ = ev_time() - connect_started_;
  pool_.metrics().connect.observe(connect_seconds_);
  ev_timer_stop(pool_.loop(), &timer_);
  ev_io_start(pool_.loop(), &rev_);
  if (streams_.empty())
    arm_idle();
  run_deferred();
}

void Http2UpstreamConnection::on_readable() {
  if (state_ == State::CONNECTING) {
    if (tls_)
      advance(); // the handshake waits for the upstream's reply
    return;
  }
  for (int i = 0; i < kReadsPerWakeup && (state_ == State::OPEN || state_ == State::DRAINING);
       ++i) {
    if (!in_)
      in_ = core::BlockPool::local().get();
    size_t n = 0;
    Read r = read_some(in_->data, core::kBlockSize, &n);
    if (r == Read::WOULD_BLOCK)
      break;
    if (r != Read::DATA) {
      close(UpstreamError::RESET);
      return;
    }
    ssize_t used = nghttp2_session_mem_recv(session_, reinterpret_cast<uint8_t*>(in_->data), n);
    if (used < 0) {
      close(UpstreamError::PROTOCOL_ERROR);
      return;
    }
    if (n < core::kBlockSize && !tls_pending())
      break;
  }
  if (in_) {
    core::BlockPool::local().put(in_);
    in_ = nullptr;
  }
  if (tls_) {
    keep_tls_session(); // a session ticket has come by the first response
    if (tls_pending() && state_ != State::CLOSED)
      ev_feed_event(pool_.loop(), &rev_, EV_READ); // decrypted bytes the socket will not signal
  }
  // SETTINGS and PING acknowledgements, window updates.
  want_flush();
}

int Http2UpstreamConnection::on_begin_headers(nghttp2_session*, const nghttp2_frame* f,
                                              void* user) {
  auto* st = static_cast<Http2UpstreamStream*>(
      nghttp2_session_get_stream_user_data(self(user)->session_, f->hd.stream_id));
  if (st) {
    st->header_bytes_ = 0; // per header block: the head (each 1xx anew), then the trailers
    if (st->response_ != Http2UpstreamStream::Response::BODY)
      st->head_.clear();
  }
  return 0;
}

int Http2UpstreamConnection::on_header(nghttp2_session* s, const nghttp2_frame* f,
                                       const uint8_t* name, size_t namelen, const uint8_t* value,
                                       size_t valuelen, uint8_t, void* user) {
  Http2UpstreamConnection* c = self(user);
  auto* st =
      static_cast<Http2UpstreamStream*>(nghttp2_session_get_stream_user_data(s, f->hd.stream_id));
  if (!st || !st->client_)
    return 0;
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  st->saw_response();
  st->touch();
  // The same budget as an HTTP/1.1 head, counted as the same fields would take there
  // ("name: value" and CRLF), for the head and the trailers each. Over it, the stream is
  // reset and its request answered 502.
  st->header_bytes_ += namelen + valuelen + 4;
  if (st->header_bytes_ > c->pool_.cluster().max_response_header_bytes)
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  if (st->response_ == Http2UpstreamStream::Response::BODY) { // trailers: nghttp2 has checked they
                                                              // carry no pseudo-header
    st->trailers_.push_back({st->arena_.copy(n), st->arena_.copy(v)});
    return 0;
  }
  if (n == ":status") {
    int status = 0;
    std::from_chars(v.data(), v.data() + v.size(), status);
    st->head_.status = status;
    return 0;
  }
  st->head_.headers.push_back({st->arena_.copy(n), st->arena_.copy(v)});
  return 0;
}

int Http2UpstreamConnection::on_frame_recv(nghttp2_session* s, const nghttp2_frame* f, void* user) {
  Http2UpstreamConnection* c = self(user);
  switch (f->hd.type) {
  case NGHTTP2_SETTINGS:
    if (!(f->hd.flags & NGHTTP2_FLAG_ACK)) {
      c->limit_known_ = true;
      c->conns_.room_grew(); // the limit may have grown: waiting requests may fit
    }
    return 0;
  case NGHTTP2_GOAWAY:
    // Streams above the last one it saw are closed by nghttp2 as refused (NOT_DELIVERED:
    // RFC 9113 6.8 says they were not processed); the rest may finish. No new ones here.
    if (c->state_ == State::OPEN)
      c->state_ = State::DRAINING;
    return 0;
  case NGHTTP2_HEADERS:
  case NGHTTP2_DATA: break;
  default: return 0;
  }
  auto* st =
      static_cast<Http2UpstreamStream*>(nghttp2_session_get_stream_user_data(s, f->hd.stream_id));
  if (!st || !st->client_)
    return 0;
  bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
  if (f->hd.type == NGHTTP2_HEADERS && st->response_ != Http2UpstreamStream::Response::BODY) {
    if (st->head_.status < 200) {
      // 1xx: nothing for the client (a 100 Continue was answered by the proxy already).
      st->head_.clear();
      return 0;
    }
    auto& h = st->head_;
    for (const auto& field : h.headers)
      if (field.name == "content-length") {
        int64_t n = -1;
        auto r = std::from_chars(field.value.data(), field.value.data() + field.value.size(), n);
        if (r.ec == std::errc() && r.ptr == field.value.data() + field.value.size())
          h.content_length = n;
      }
    if (st->head_request_ || h.status == 204 || h.status == 304)
      h.content_length = h.content_length < 0 ? 0 : h.content_length;
    else if (end)
      h.content_length = 0;
    st->set_response(Http2UpstreamStream::Response::BODY);
    st->client_->on_upstream_head(h);
    if (!st->client_)
      return 0; // the client failed the exchange on seeing the head
  } else if (f->hd.type == NGHTTP2_HEADERS && st->client_) {
    for (const auto& t : st->trailers_)
      st->client_->on_upstream_trailer(t.name, t.value);
  }
  if (end && st->client_)
    c->end_response(*st);
  return 0;
}

void Http2UpstreamConnection::end_response(Http2UpstreamStream& st) {
  UpstreamStreamListener* client = st.client_;
  ++completed_;
  // The request may still be sending a body no one needs now: stop it (NO_ERROR, as
  // RFC 9113 8.1 asks of a server that answered early; nghttp2 does the same).
  bool cancel = st.body_unfinished();
  st.release_client(false);
  if (cancel) {
    PORTICO_NGHTTP2_MUST(
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, st.id_, NGHTTP2_NO_ERROR));
    want_flush();
  }
  client->on_upstream_end();
}

int Http2UpstreamConnection::on_data_chunk_recv(nghttp2_session* s, uint8_t, int32_t id,
                                                const uint8_t* data, size_t len, void* user) {
  auto* st = static_cast<Http2UpstreamStream*>(nghttp2_session_get_stream_user_data(s, id));
  if (!st || !st->client_) {
    PORTICO_NGHTTP2_MUST(nghttp2_session_consume(s, id, len));
    return 0;
  }
  st->saw_response();
  st->touch();
  st->client_->on_upstream_body({reinterpret_cast<const char*>(data), len});
  // The client may have paused this stream (its buffer is full) or left: hold the window.
  if (st->paused_ && st->client_) {
    st->unconsumed_ += len;
  } else {
    PORTICO_NGHTTP2_MUST(nghttp2_session_consume(s, id, len));
    self(user)->want_flush();
  }
  return 0;
}

int Http2UpstreamConnection::on_stream_close(nghttp2_session*, int32_t id, uint32_t error_code,
                                             void* user) {
  Http2UpstreamConnection* c = self(user);
  auto* st =
      static_cast<Http2UpstreamStream*>(nghttp2_session_get_stream_user_data(c->session_, id));
  if (!st)
    return 0;
  UpstreamStreamListener* client = st->client_;
  Delivery delivery = st->response_ != Http2UpstreamStream::Response::NONE ? Delivery::ANSWERED
                      : error_code == NGHTTP2_REFUSED_STREAM               ? Delivery::NOT_DELIVERED
                                                                           : Delivery::UNANSWERED;
  if (client) {
    st->client_ = nullptr;
    c->pool_.metrics().errors.reset().inc();
  }
  if (st->unconsumed_ > 0)
    PORTICO_NGHTTP2_MUST(nghttp2_session_consume_connection(c->session_, st->unconsumed_));
  st->unconsumed_ = 0;
  c->stream_gone(st);
  if (client)
    client->on_upstream_error(UpstreamError::RESET, delivery);
  return 0;
}

void Http2UpstreamConnection::drain() {
  if (state_ != State::OPEN)
    return;
  state_ = State::DRAINING;
  PORTICO_NGHTTP2_MUST(nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR));
  want_flush();
  if (streams_.empty() && out_.empty())
    flush();
}

void Http2UpstreamConnection::close(UpstreamError e) {
  if (state_ == State::CLOSED)
    return;
  state_ = State::CLOSED;
  end_tls(); // close_notify, best effort
  close_socket();
  out_.clear();
  // Every stream still carrying a request fails. One the connect never carried was not
  // delivered; one that saw no response byte may or may not have been.
  bool connect_failed = is_connect_failure(e);
  std::vector<std::pair<UpstreamStreamListener*, Delivery>> failed;
  for (Http2UpstreamStream* st = streams_.front(); st; st = Streams::next(st))
    if (st->client_) {
      failed.push_back({st->client_, connect_failed ? Delivery::NOT_DELIVERED
                                     : st->response_ != Http2UpstreamStream::Response::NONE
                                         ? Delivery::ANSWERED
                                         : Delivery::UNANSWERED});
      st->client_ = nullptr;
      ev_timer_stop(pool_.loop(), &st->timer_);
    }
  if (!connect_failed && !failed.empty())
    pool_.metrics().errors[kind_of(e)].inc();
  conns_.closed(this); // disposes of this, its queued flush cancelled
  for (auto [client, delivery] : failed)
    client->on_upstream_error(e, delivery);
}

} // namespace portico::upstream
