#include "server/http2_exchange.h"

#include "core/error_log.h"
#include "server/client_connection.h"
#include "server/http2_server_session.h"
#include "server/server_context.h"

#include <cassert>
#include <vector>

namespace portico::server {

const char* to_string(Http2Exchange::Phase p) {
  switch (p) {
  case Http2Exchange::Phase::HEAD: return "head";
  case Http2Exchange::Phase::TOO_LARGE: return "too_large";
  case Http2Exchange::Phase::DISPATCHED: return "dispatched";
  }
  return "?";
}

void Http2Exchange::set_phase(Phase next) {
  assert(phase_ == Phase::HEAD && next != Phase::HEAD && "Http2Exchange phase transition");
  phase_ = next;
}

namespace {
// Streams outlive no connection, but their memory is reused across connections of a thread.
constexpr size_t kMaxFreeStreams = 8192;
// Parked streams, deleted with their thread.
struct FreeStreams : std::vector<Http2Exchange*> {
  ~FreeStreams() {
    for (Http2Exchange* st : *this)
      delete st;
  }
};
thread_local FreeStreams free_streams;
} // namespace

Http2Exchange* Http2Exchange::acquire(Http2ServerSession& s, int32_t id) {
  Http2Exchange* st;
  if (!free_streams.empty()) {
    st = free_streams.back();
    free_streams.pop_back();
  } else {
    st = new Http2Exchange;
  }
  st->session_ = &s;
  st->id_ = id;
  st->loop_ = nullptr;
  st->listener_ = nullptr;
  st->head_sent_ = st->response_ended_ = st->request_ended_ = false;
  st->response_status_ = 0;
  st->body_bytes_sent_ = 0; // each stream's own: these objects are recycled within the worker
  st->header_bytes_ = st->unconsumed_ = 0;
  st->send_waiting_since_ = 0;
  st->body_received_ = 0;
  st->rules_ = {};
  st->malformed_ = false;
  st->phase_ = Phase::HEAD;
  st->paused_ = st->deferred_ = st->has_provider_ = st->writable_wanted_ = false;
  st->hook_ = {};
  st->request_.clear();
  st->request_trailers_.clear();
  st->response_trailers_.clear();
  return st;
}

void Http2Exchange::release(Http2Exchange* st) {
  st->body_.clear();
  // A parked stream keeps no blocks (its arena's inline bytes suffice for typical headers):
  // after a burst of 10,000 streams the blocks go back to the pool, not with idle streams.
  st->arena_.reset();
  st->session_ = nullptr;
  if (free_streams.size() < kMaxFreeStreams)
    free_streams.push_back(st);
  else
    delete st;
}

void Http2Exchange::socket_addresses(sockaddr_storage& peer, sockaddr_storage& local) const {
  if (session_)
    session_->connection().socket_addresses(peer, local);
  else
    Exchange::socket_addresses(peer, local);
}

void Http2Exchange::send_head(const http::ResponseHead& head) {
  if (head_sent_)
    return;
  head_sent_ = true;
  response_status_ = head.status;
  session_->submit_response(*this, head);
}

void Http2Exchange::send_body(std::string_view data) {
  if (!has_provider_ || response_ended_ || data.empty())
    return;
  auto& ctx = session_->connection().context();
  if (body_.size() + data.size() > ctx.limits().max_buffered_response_bytes) {
    // A producer that ignored the watermarks: this stream goes (the reset closes it later, in
    // the session's own time), the connection and its other streams stay.
    ctx.stats().buffer_limit_aborts.inc();
    core::log::write(core::log::Level::WARN, core::log::Kind::LIMIT,
                     "a response above max_buffered_response_bytes (%zu) was cut",
                     ctx.limits().max_buffered_response_bytes);
    has_provider_ = false; // nothing more is taken
    session_->reset_stream(*this, NGHTTP2_INTERNAL_ERROR);
    return;
  }
  body_.append(data);
  body_bytes_sent_ += data.size();
  if (send_waiting_since_ == 0)
    send_waiting_since_ = ev_now(loop_);
  if (body_.size() > kHighWatermark)
    writable_wanted_ = true;
  session_->resume_stream(*this);
}

void Http2Exchange::end_response_with_trailers(std::span<const http::Header> trailers) {
  if (!head_sent_ || response_ended_)
    return;
  // A response without a body ended with its HEADERS frame: no place for trailers there.
  if (has_provider_)
    for (const auto& t : trailers)
      response_trailers_.push_back({arena_.copy(t.name), arena_.copy(t.value)});
  end_response();
}

void Http2Exchange::end_response() {
  if (!head_sent_ || response_ended_)
    return;
  response_ended_ = true;
  if (has_provider_)
    session_->resume_stream(*this);
}

void Http2Exchange::pause_request_body() {
  paused_ = true;
}

void Http2Exchange::resume_request_body() {
  paused_ = false;
  if (unconsumed_ > 0) {
    session_->consume(*this, unconsumed_);
    unconsumed_ = 0;
  }
}

void Http2Exchange::abort() {
  session_->reset_stream(*this, NGHTTP2_INTERNAL_ERROR);
}

} // namespace portico::server
