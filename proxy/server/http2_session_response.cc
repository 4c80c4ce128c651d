// The response side of Http2ServerSession: a response head submitted as a HEADERS frame, its
// body framed from the exchange's queue as nghttp2 asks for DATA (relinked, not copied), and
// trailers as the last HEADERS frame.
#include "core/http_date.h"
#include "http/nghttp2_check.h"
#include "http/nghttp2_nv.h"
#include "server/client_connection.h"
#include "server/http2_exchange.h"
#include "server/http2_server_session.h"
#include "server/server_context.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace portico::server {

using http::make_nv;

void Http2ServerSession::submit_response(Http2Exchange& st, const http::ResponseHead& head) {
  const auto& ctx = conn_.context();
  char status[4];
  std::to_chars(status, status + 3, head.status);
  char length[24];
  size_t length_len = 0;
  // An empty body ends the stream with the HEADERS frame itself: what gRPC calls a
  // trailers-only response, whose status fields a client reads only from a frame that ends.
  bool no_body =
      st.request_.is_head() || http::status_has_no_body(head.status) || head.content_length == 0;
  // Any number of fields (a proxied head may have dozens); nghttp2 copies them before
  // submit returns, so one vector per thread serves every response.
  thread_local std::vector<nghttp2_nv> nv;
  nv.clear();
  // Names of our own are literals, lower case already: nghttp2 need not copy them.
  constexpr uint8_t kName = NGHTTP2_NV_FLAG_NO_COPY_NAME;
  nv.push_back(make_nv(":status", {status, 3}, kName));
  nv.push_back(make_nv("server", ctx.limits().server_name, kName));
  nv.push_back(make_nv("date", head.date.empty() ? core::http_date_now() : head.date, kName));
  if (conn_.is_tls())
    if (std::string_view alt = ctx.limits().alt_svc_for(conn_.listener(), head); !alt.empty())
      nv.push_back(make_nv("alt-svc", alt, kName));
  head.for_each([&](const http::Header& h) { nv.push_back(make_nv(h.name, h.value)); });
  if (head.content_length >= 0 && !http::status_has_no_body(head.status)) {
    length_len = static_cast<size_t>(
        std::to_chars(length, length + sizeof length, head.content_length).ptr - length);
    nv.push_back(make_nv("content-length", {length, length_len}, kName));
  }
  nghttp2_data_provider provider;
  provider.source.ptr = &st;
  provider.read_callback = read_data;
  st.has_provider_ = !no_body;
  if (nghttp2_submit_response(session_, st.id_, nv.data(), nv.size(),
                              no_body ? nullptr : &provider) != 0)
    reset_stream(st, NGHTTP2_INTERNAL_ERROR);
  want_write();
}

void Http2ServerSession::resume_stream(Http2Exchange& st) {
  if (st.deferred_) {
    st.deferred_ = false;
    PORTICO_NGHTTP2_MUST(nghttp2_session_resume_data(session_, st.id_));
  }
  want_write();
}

ssize_t Http2ServerSession::read_data(nghttp2_session* s, int32_t id, uint8_t*, size_t length,
                                      uint32_t* flags, nghttp2_data_source* source, void*) {
  auto* st = static_cast<Http2Exchange*>(source->ptr);
  size_t n = std::min(length, st->body_.size());
  if (n == 0 && !st->response_ended_) {
    st->deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (st->response_ended_ && n == st->body_.size()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!st->response_trailers_.empty()) {
      // The stream ends with a trailing HEADERS frame instead of this DATA frame.
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      std::vector<nghttp2_nv> nv;
      nv.reserve(st->response_trailers_.size());
      for (const auto& t : st->response_trailers_)
        nv.push_back(make_nv(t.name, t.value));
      st->response_trailers_.clear();
      // Ending the stream without them would pass a response whose trailers (a gRPC status,
      // a checksum) were lost for a whole one: reset it instead.
      if (nghttp2_submit_trailer(s, id, nv.data(), nv.size()) != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
  }
  return static_cast<ssize_t>(n);
}

int Http2ServerSession::send_data(nghttp2_session*, nghttp2_frame* f, const uint8_t* framehd,
                                  size_t length, nghttp2_data_source* source, void* ud) {
  auto* me = self(ud);
  auto* st = static_cast<Http2Exchange*>(source->ptr);
  auto& out = me->conn_.output();
  out.append(framehd, 9);
  st->body_.move_to(out, length);
  st->send_waiting_since_ = st->body_.empty() ? 0 : ev_now(me->conn_.loop());
  if (st->writable_wanted_ && st->body_.size() < Exchange::kLowWatermark) {
    st->writable_wanted_ = false;
    me->writable_.push_back(st);
  }
  return 0;
}

} // namespace portico::server
