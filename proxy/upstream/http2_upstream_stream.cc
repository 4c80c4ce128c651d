#include "upstream/http2_upstream_stream.h"

#include "http/nghttp2_check.h"
#include "http/nghttp2_nv.h"
#include "upstream/http2_upstream_connection.h"
#include "upstream/request_fields.h"
#include "upstream/upstream_pool.h"

#include <algorithm>
#include <cassert>
#include <charconv>

namespace portico::upstream {

namespace {

using http::make_nv;

// HTTP/2: name-value pairs for nghttp2_submit_request, which copies them before returning.
struct Http2Fields {
  std::vector<nghttp2_nv>& nva;
  http::Arena& arena;
  static constexpr bool kJoinCookies = false; // crumbs are fine on HTTP/2
  static constexpr bool kTeTrailers = true;   // the one TE HTTP/2 has (gRPC needs it)
  void field(std::string_view name, std::string_view value) { nva.push_back(make_nv(name, value)); }
  void field_join(std::string_view name, std::initializer_list<std::string_view> parts) {
    nva.push_back(make_nv(name, arena.join(parts)));
  }
  void unique_field(std::string_view name, std::string_view value) {
    // Indexing a value never seen again would only churn both sides' dynamic tables.
    nva.push_back(make_nv(name, arena.copy(value), NGHTTP2_NV_FLAG_NO_INDEX));
  }
  void joined_cookies(const http::RequestHead&) {}
};

} // namespace

Http2UpstreamStream::Http2UpstreamStream(Http2UpstreamConnection& conn,
                                         UpstreamStreamListener* client, bool head_request,
                                         bool first)
    : conn_(conn), client_(client), head_request_(head_request), first_(first) {
  ev_init(&timer_, timer_cb);
  timer_.data = this;
}

Http2UpstreamStream::~Http2UpstreamStream() {
  ev_timer_stop(conn_.pool_.loop(), &timer_);
}

double Http2UpstreamStream::connect_seconds() const {
  return conn_.connect_seconds();
}

void Http2UpstreamStream::send_head(const http::RequestHead& req, BodyFraming framing,
                                    const ClientOrigin& client, const ForwardingOptions& fwd) {
  thread_local std::vector<nghttp2_nv> nva;
  nva.clear();
  nva.push_back(make_nv(":method", req.method));
  nva.push_back(make_nv(":scheme", "http"));
  // An HTTP/1.0 request may come without Host, but an HTTP/2 request needs :authority (nghttp2
  // and RFC 9113 8.3.1): name the upstream instead, as nginx's proxy_pass does with Host.
  std::string_view authority = req.authority;
  if (authority.empty()) {
    const core::EndpointSpec& ep = conn_.pool_.endpoint();
    authority = ep.is_unix ? std::string_view("localhost")
                           : arena_.copy(ep.host + ":" + std::to_string(ep.port));
  }
  nva.push_back(make_nv(":authority", authority));
  nva.push_back(make_nv(":path", req.target));
  Http2Fields fields{nva, arena_};
  for_each_upstream_field(req, client, fwd, fields);
  char length[24];
  if (framing == BodyFraming::CONTENT_LENGTH) {
    auto r = std::to_chars(length, length + sizeof length, req.content_length);
    nva.push_back(make_nv("content-length", {length, static_cast<size_t>(r.ptr - length)}));
  }
  bool has_body = framing != BodyFraming::NONE;
  nghttp2_data_provider provider{};
  provider.source.ptr = this;
  provider.read_callback = read_body;
  id_ = nghttp2_submit_request(conn_.session_, nullptr, nva.data(), nva.size(),
                               has_body ? &provider : nullptr, this);
  if (id_ < 0) {
    // The session takes no more streams (it is going away): the client hears of it from
    // the loop, as a refused stream it may retry.
    set_request(Request::REFUSED);
    conn_.has_failed_streams_ = true;
  } else {
    set_request(has_body ? Request::BODY : Request::SENT);
  }
  last_activity_ = ev_now(conn_.pool_.loop());
  timer_.repeat =
      has_body ? conn_.pool_.first_timer_check() : conn_.pool_.cluster().response_timeout;
  ev_timer_again(conn_.pool_.loop(), &timer_);
  conn_.want_flush();
}

void Http2UpstreamStream::send_body(std::string_view data) {
  if (request_ != Request::BODY)
    return;
  touch();
  body_.append(data);
  if (body_deferred_) {
    body_deferred_ = false;
    PORTICO_NGHTTP2_MUST(nghttp2_session_resume_data(conn_.session_, id_));
  }
  conn_.want_flush();
}

void Http2UpstreamStream::end_request(std::span<const http::Header> trailers) {
  if (request_ != Request::BODY)
    return; // no body (or refused): the HEADERS ended the stream, trailers have no place
  for (const auto& t : trailers)
    trailers_.push_back({arena_.copy(t.name), arena_.copy(t.value)});
  set_request(Request::BODY_ENDED);
  if (body_deferred_) {
    body_deferred_ = false;
    PORTICO_NGHTTP2_MUST(nghttp2_session_resume_data(conn_.session_, id_));
  }
  conn_.want_flush();
}

ssize_t Http2UpstreamStream::read_body(nghttp2_session* s, int32_t id, uint8_t* buf, size_t len,
                                       uint32_t* flags, nghttp2_data_source* src, void*) {
  auto* st = static_cast<Http2UpstreamStream*>(src->ptr);
  bool was_high = st->body_.size() >= kBodyHigh;
  size_t n = st->body_.peek(reinterpret_cast<char*>(buf), len);
  st->body_.drain(n);
  if (n > 0)
    st->touch();
  if (was_high && st->body_.size() < kBodyHigh && st->client_)
    st->conn_.notify_writable_ = true;
  if (st->body_.empty()) {
    if (st->request_ == Request::BODY) {
      if (n > 0)
        return static_cast<ssize_t>(n);
      st->body_deferred_ = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    st->set_request(Request::SENT);
    st->touch(); // the wait for the answer starts now
    if (!st->trailers_.empty()) {
      std::vector<nghttp2_nv> nva;
      for (const auto& t : st->trailers_)
        nva.push_back(make_nv(t.name, t.value));
      // Without its trailers the request would arrive changed: reset rather than end it.
      if (nghttp2_submit_trailer(s, id, nva.data(), nva.size()) != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
  }
  return static_cast<ssize_t>(n);
}

void Http2UpstreamStream::resume_reading() {
  paused_ = false;
  if (unconsumed_ > 0 && id_ >= 0) {
    PORTICO_NGHTTP2_MUST(nghttp2_session_consume(conn_.session_, id_, unconsumed_));
    unconsumed_ = 0;
    conn_.want_flush();
  }
  touch();
}

void Http2UpstreamStream::detach() {
  release_client(true);
}

void Http2UpstreamStream::release_client(bool cancel) {
  client_ = nullptr;
  ev_timer_stop(conn_.pool_.loop(), &timer_);
  if (id_ < 0) {
    conn_.has_failed_streams_ = true; // never reached nghttp2: freed from the loop
    conn_.want_flush();
    return;
  }
  if (cancel && conn_.state_ != Http2UpstreamConnection::State::CLOSED) {
    PORTICO_NGHTTP2_MUST(
        nghttp2_submit_rst_stream(conn_.session_, NGHTTP2_FLAG_NONE, id_, NGHTTP2_CANCEL));
    conn_.want_flush();
  }
  // Response DATA no one will read still counts against the connection's window.
  if (unconsumed_ > 0 && conn_.state_ != Http2UpstreamConnection::State::CLOSED) {
    PORTICO_NGHTTP2_MUST(nghttp2_session_consume_connection(conn_.session_, unconsumed_));
    unconsumed_ = 0;
  }
}

void Http2UpstreamStream::touch() {
  last_activity_ = ev_now(conn_.pool_.loop());
}

void Http2UpstreamStream::timer_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<Http2UpstreamStream*>(w->data)->on_timer();
}

void Http2UpstreamStream::on_timer() {
  // While the body is going up, the limit is on its progress; then on the answer.
  const auto& cfg = conn_.pool_.cluster();
  double limit = request_ == Request::SENT ? cfg.response_timeout : cfg.send_timeout;
  double left = last_activity_ + limit - ev_now(conn_.pool_.loop());
  if (paused_ || left > 0.001) {
    // A paused stream waits on the client, not on the upstream.
    timer_.repeat = paused_ ? limit : left;
    ev_timer_again(conn_.pool_.loop(), &timer_);
    return;
  }
  UpstreamStreamListener* c = client_;
  UpstreamError e =
      request_ == Request::SENT ? UpstreamError::RESPONSE_TIMEOUT : UpstreamError::SEND_TIMEOUT;
  conn_.pool_.metrics().errors[kind_of(e)].inc();
  release_client(true);
  if (c)
    c->on_upstream_error(e, Delivery::ANSWERED);
}

const char* to_string(Http2UpstreamStream::Request r) {
  using R = Http2UpstreamStream::Request;
  switch (r) {
  case R::UNSENT: return "unsent";
  case R::REFUSED: return "refused";
  case R::BODY: return "body";
  case R::BODY_ENDED: return "body_ended";
  case R::SENT: return "sent";
  }
  return "?";
}

const char* to_string(Http2UpstreamStream::Response r) {
  using R = Http2UpstreamStream::Response;
  switch (r) {
  case R::NONE: return "none";
  case R::HEAD: return "head";
  case R::BODY: return "body";
  }
  return "?";
}

void Http2UpstreamStream::set_request(Request next) {
  // UNSENT -> REFUSED | BODY | SENT; BODY -> BODY_ENDED -> SENT.
  [[maybe_unused]] bool legal =
      request_ == Request::UNSENT
          ? next == Request::REFUSED || next == Request::BODY || next == Request::SENT
          : (request_ == Request::BODY && next == Request::BODY_ENDED) ||
                (request_ == Request::BODY_ENDED && next == Request::SENT);
  assert(legal && "Http2UpstreamStream request state goes forward only");
  request_ = next;
}

void Http2UpstreamStream::set_response(Response next) {
  [[maybe_unused]] bool legal = next > response_;
  assert(legal && "Http2UpstreamStream response state goes forward only");
  response_ = next;
}

} // namespace portico::upstream
