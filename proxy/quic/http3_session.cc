#include "quic/http3_session.h"

#include "core/error_log.h"
#include "core/http_date.h"
#include "http/framed_field.h"
#include "http/response_head.h"
#include "quic/quic_connection.h"
#include "server/framed_request_limits.h"
#include "server/server_context.h"

#include <charconv>
#include <vector>

namespace portico::quic {

namespace {
nghttp3_nv make_nv(std::string_view n, std::string_view v) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
          NGHTTP3_NV_FLAG_NONE};
}

std::string_view view(nghttp3_rcbuf* b) {
  nghttp3_vec v = nghttp3_rcbuf_get_buf(b);
  return {reinterpret_cast<const char*>(v.base), v.len};
}
} // namespace

Http3Session::Http3Session(QuicConnection& conn, server::ServerContext& ctx, size_t max_streams)
    : conn_(conn), ctx_(ctx) {
  nghttp3_callbacks cbs{};
  cbs.acked_stream_data = on_acked;
  cbs.stream_close = on_stream_close;
  cbs.recv_data = on_recv_data;
  cbs.deferred_consume = on_deferred_consume;
  cbs.begin_headers = on_begin_headers;
  cbs.recv_header = on_header;
  cbs.end_headers = on_end_headers;
  cbs.recv_trailer = on_trailer;
  cbs.stop_sending = on_stop_sending;
  cbs.end_stream = on_end_stream;
  cbs.reset_stream = on_reset_stream;
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  // No max_field_section_size: a section over max_header_bytes is answered 431, as on HTTP/1
  // and HTTP/2 (a client told the limit fails the request itself, with no answer); the
  // stream's flow-control window bounds what one can send.
  // A bounded QPACK dynamic table (what the client may make us hold), and streams it may
  // leave blocked on it.
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 16;
  if (nghttp3_conn_server_new(&h3_, &cbs, &settings, nghttp3_mem_default(), this) != 0)
    h3_ = nullptr;
  else
    nghttp3_conn_set_max_client_streams_bidi(h3_, max_streams);
}

Http3Session::~Http3Session() {
  abort_all();
  if (h3_)
    nghttp3_conn_del(h3_);
}

bool Http3Session::start() {
  if (!h3_)
    return false;
  int64_t control, encoder, decoder;
  return conn_.open_uni_stream(&control) && nghttp3_conn_bind_control_stream(h3_, control) == 0 &&
         conn_.open_uni_stream(&encoder) && conn_.open_uni_stream(&decoder) &&
         nghttp3_conn_bind_qpack_streams(h3_, encoder, decoder) == 0;
}

int64_t Http3Session::on_stream_data(int64_t id, const uint8_t* data, size_t len, bool fin) {
  return nghttp3_conn_read_stream(h3_, id, data, len, fin ? 1 : 0);
}

int64_t Http3Session::next_output(int64_t* id, int* fin, nghttp3_vec* vec, size_t n) {
  return nghttp3_conn_writev_stream(h3_, id, fin, vec, n);
}

int Http3Session::wrote(int64_t id, size_t n) {
  return nghttp3_conn_add_write_offset(h3_, id, n);
}

void Http3Session::blocked(int64_t id) {
  nghttp3_conn_block_stream(h3_, id);
}

void Http3Session::unblocked(int64_t id) {
  if (nghttp3_conn_unblock_stream(h3_, id) == 0)
    conn_.want_write();
}

void Http3Session::write_shut(int64_t id) {
  nghttp3_conn_shutdown_stream_write(h3_, id);
}

int Http3Session::acked(int64_t id, uint64_t n) {
  return nghttp3_conn_add_ack_offset(h3_, id, n);
}

int Http3Session::stream_closed(int64_t id, uint64_t app_error) {
  int rv = nghttp3_conn_close_stream(h3_, id, app_error);
  // A stream nghttp3 never knew (unidirectional of an unknown type, say) is no error.
  return rv == NGHTTP3_ERR_STREAM_NOT_FOUND ? 0 : rv;
}

int Http3Session::read_reset(int64_t id) {
  return nghttp3_conn_shutdown_stream_read(h3_, id);
}

int Http3Session::write_stopped(int64_t id) {
  // The client wants no more of the response (STOP_SENDING): its sending side is reset too.
  conn_.shutdown_stream(id, NGHTTP3_H3_REQUEST_CANCELLED);
  return 0;
}

void Http3Session::max_client_streams(uint64_t n) {
  nghttp3_conn_set_max_client_streams_bidi(h3_, n);
}

void Http3Session::drain() {
  // GOAWAY naming the next stream (nghttp3 tracks it): requests under way finish, new ones the
  // client sends elsewhere.
  nghttp3_conn_shutdown(h3_);
  conn_.want_write();
}

void Http3Session::abort_all() {
  std::vector<Http3Exchange*> all;
  all.reserve(streams_.size());
  for (auto& [id, st] : streams_)
    all.push_back(st);
  streams_.clear();
  for (Http3Exchange* st : all)
    finish(st);
}

void Http3Session::finish(Http3Exchange* st) {
  st->closed_ = true;
  if (auto* l = st->listener()) {
    st->set_listener(nullptr);
    l->on_exchange_close(*st);
  }
  delete st;
}

// ---- for Http3Exchange ----

void Http3Session::submit_response(Http3Exchange& st, const http::ResponseHead& head) {
  char status[4];
  std::to_chars(status, status + 3, head.status);
  char length[24];
  bool no_body =
      st.request().is_head() || http::status_has_no_body(head.status) || head.content_length == 0;
  thread_local std::vector<nghttp3_nv> nv;
  nv.clear();
  nv.push_back(make_nv(":status", {status, 3}));
  nv.push_back(make_nv("server", ctx_.limits().server_name));
  nv.push_back(make_nv("date", head.date.empty() ? core::http_date_now() : head.date));
  head.for_each([&](const http::Header& h) { nv.push_back(make_nv(h.name, h.value)); });
  if (head.content_length >= 0 && !http::status_has_no_body(head.status)) {
    size_t n = static_cast<size_t>(
        std::to_chars(length, length + sizeof length, head.content_length).ptr - length);
    nv.push_back(make_nv("content-length", {length, n}));
  }
  nghttp3_data_reader reader{read_data};
  st.has_reader_ = !no_body;
  if (nghttp3_conn_submit_response(h3_, st.id_, nv.data(), nv.size(),
                                   no_body ? nullptr : &reader) != 0)
    reset(st, NGHTTP3_H3_INTERNAL_ERROR);
  conn_.want_write();
}

void Http3Session::resume(Http3Exchange& st) {
  if (st.blocked_) {
    st.blocked_ = false;
    nghttp3_conn_resume_stream(h3_, st.id_);
  }
  conn_.want_write();
}

void Http3Session::submit_trailers(Http3Exchange& st, const nghttp3_nv* nv, size_t n) {
  if (nghttp3_conn_submit_trailers(h3_, st.id_, nv, n) != 0)
    reset(st, NGHTTP3_H3_INTERNAL_ERROR);
}

void Http3Session::consume(Http3Exchange& st, size_t n) {
  conn_.credit(st.id_, n);
}

void Http3Session::reset(Http3Exchange& st, uint64_t app_error) {
  conn_.shutdown_stream(st.id_, app_error);
}

void Http3Session::dispatch(Http3Exchange& st) {
  auto& r = st.mutable_request();
  r.version = http::Version::HTTP_3;
  if (r.authority.empty())
    if (const auto* host = r.find("host"))
      r.authority = host->value;
  ctx_.stats().requests.inc();
  if (st.too_large_) {
    server::refuse_request(st, ctx_.handler(), 431);
    return;
  }
  st.dispatched_ = true;
  if (server::refuse_framed_request(st, ctx_.handler(), r, ctx_.limits().parser))
    return;
  st.handler_ = &ctx_.handler();
  ctx_.handler().on_request(st);
}

void Http3Session::request_ended(Http3Exchange& st) {
  st.request_ended_ = true;
  if (!st.listener() || st.response_ended())
    return;
  if (!st.request_trailers_.empty())
    st.listener()->on_request_trailers(st, st.request_trailers_);
  if (st.listener() && !st.response_ended())
    st.listener()->on_request_end(st);
}

// ---- nghttp3 callbacks ----

int Http3Session::on_begin_headers(nghttp3_conn* h3, int64_t id, void* ud, void* sud) {
  if (sud)
    return 0; // trailers come through begin_trailers; this is a second HEADERS: nghttp3's to refuse
  auto* me = self(ud);
  auto* st = new Http3Exchange(*me, id);
  nghttp3_conn_set_stream_user_data(h3, id, st);
  me->streams_[id] = st;
  return 0;
}

int Http3Session::on_header(nghttp3_conn*, int64_t, int32_t, nghttp3_rcbuf* name,
                            nghttp3_rcbuf* value, uint8_t, void* ud, void* sud) {
  Http3Exchange* st = exchange_of(sud);
  if (!st || st->too_large_)
    return 0;
  std::string_view n = view(name), v = view(value);
  st->header_bytes_ += n.size() + v.size() + 32;
  if (st->header_bytes_ > self(ud)->ctx_.limits().parser.max_header_bytes) {
    st->too_large_ = true;
    return 0;
  }
  auto& r = st->mutable_request();
  auto& a = st->arena();
  http::add_framed_field(r, a, n, v);
  return 0;
}

int Http3Session::on_end_headers(nghttp3_conn*, int64_t, int fin, void* ud, void* sud) {
  Http3Exchange* st = exchange_of(sud);
  if (!st)
    return 0;
  // The handler may ask whether a body follows: headers that end the stream have none. The
  // listener hears of the end from on_end_stream, which nghttp3 calls next, and only there.
  if (fin)
    st->request_ended_ = true;
  self(ud)->dispatch(*st);
  return 0;
}

int Http3Session::on_trailer(nghttp3_conn*, int64_t, int32_t, nghttp3_rcbuf* name,
                             nghttp3_rcbuf* value, uint8_t, void* ud, void* sud) {
  Http3Exchange* st = exchange_of(sud);
  if (!st)
    return 0;
  std::string_view n = view(name), v = view(value);
  st->header_bytes_ += n.size() + v.size() + 32;
  if (st->header_bytes_ > self(ud)->ctx_.limits().parser.max_header_bytes) {
    // Not passed on without them (they may carry a checksum or a status): the stream goes.
    self(ud)->reset(*st, NGHTTP3_H3_REQUEST_REJECTED);
    return 0;
  }
  st->request_trailers_.push_back({st->arena().copy(n), st->arena().copy(v)});
  return 0;
}

int Http3Session::on_recv_data(nghttp3_conn*, int64_t id, const uint8_t* data, size_t len, void* ud,
                               void* sud) {
  auto* me = self(ud);
  Http3Exchange* st = exchange_of(sud);
  if (!st) {
    me->conn_.credit(id, len);
    return 0;
  }
  int64_t max_body = me->ctx_.limits().parser.max_body_bytes;
  st->body_received_ += static_cast<int64_t>(len);
  if (max_body >= 0 && st->body_received_ > max_body) {
    me->conn_.credit(id, len);
    if (st->response_ended())
      return 0;
    if (!st->head_sent())
      st->respond(413, "text/plain", "Content Too Large\n");
    else
      me->reset(*st, NGHTTP3_H3_REQUEST_CANCELLED);
    return 0;
  }
  if (st->dispatched_ && !st->response_ended() && st->listener())
    st->listener()->on_request_body(*st, {reinterpret_cast<const char*>(data), len});
  if (st->paused_)
    st->unconsumed_ += len;
  else
    me->conn_.credit(id, len);
  return 0;
}

int Http3Session::on_deferred_consume(nghttp3_conn*, int64_t id, size_t n, void* ud, void*) {
  self(ud)->conn_.credit(id, n);
  return 0;
}

int Http3Session::on_end_stream(nghttp3_conn*, int64_t, void* ud, void* sud) {
  if (Http3Exchange* st = exchange_of(sud))
    self(ud)->request_ended(*st);
  return 0;
}

int Http3Session::on_stop_sending(nghttp3_conn*, int64_t id, uint64_t err, void* ud, void*) {
  self(ud)->conn_.shutdown_stream_read(id, err);
  return 0;
}

int Http3Session::on_reset_stream(nghttp3_conn*, int64_t id, uint64_t err, void* ud, void*) {
  self(ud)->conn_.shutdown_stream(id, err);
  return 0;
}

int Http3Session::on_acked(nghttp3_conn*, int64_t, uint64_t n, void*, void* sud) {
  if (Http3Exchange* st = exchange_of(sud))
    st->acked(n);
  return 0;
}

int Http3Session::on_stream_close(nghttp3_conn*, int64_t id, uint64_t, void* ud, void* sud) {
  auto* me = self(ud);
  Http3Exchange* st = exchange_of(sud);
  if (!st)
    return 0;
  me->streams_.erase(id);
  me->finish(st);
  if (me->streams_.empty())
    me->conn_.want_write(); // a drain may end now
  return 0;
}

nghttp3_ssize Http3Session::read_data(nghttp3_conn*, int64_t, nghttp3_vec* vec, size_t veccnt,
                                      uint32_t* pflags, void*, void* sud) {
  Http3Exchange* st = exchange_of(sud);
  if (!st)
    return NGHTTP3_ERR_CALLBACK_FAILURE;
  return st->read_data(vec, veccnt, pflags);
}

} // namespace portico::quic
