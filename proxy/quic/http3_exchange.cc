#include "quic/http3_exchange.h"

#include "core/error_log.h"
#include "quic/http3_session.h"
#include "quic/quic_connection.h"
#include "server/server_context.h"

#include <cstring>

namespace portico::quic {

Http3Exchange::Http3Exchange(Http3Session& s, int64_t id) : session_(&s), id_(id) {
  auto& conn = s.connection();
  loop_ = s.context().loop();
  client_address_ = conn.peer_text();
  over_tls_ = true;
  listener_index_ = conn.listener();
}

Http3Exchange::~Http3Exchange() = default;

void Http3Exchange::socket_addresses(sockaddr_storage& peer, sockaddr_storage& local) const {
  const PacketPath& p = session_->connection().path();
  peer = p.remote;
  local = p.local;
}

void Http3Exchange::send_head(const http::ResponseHead& head) {
  if (head_sent_ || closed_)
    return;
  head_sent_ = true;
  response_status_ = head.status;
  session_->submit_response(*this, head);
}

void Http3Exchange::send_body(std::string_view data) {
  if (!has_reader_ || response_ended_ || closed_ || data.empty())
    return;
  auto& ctx = session_->context();
  if (body_.size() + data.size() > ctx.limits().max_buffered_response_bytes) {
    // A producer that ignored the watermarks: this stream goes, the connection stays.
    ctx.stats().buffer_limit_aborts.inc();
    core::log::write(core::log::Level::WARN, core::log::Kind::LIMIT,
                     "a response above max_buffered_response_bytes (%zu) was cut",
                     ctx.limits().max_buffered_response_bytes);
    has_reader_ = false;
    session_->reset(*this, NGHTTP3_H3_INTERNAL_ERROR);
    return;
  }
  body_.append(data);
  body_bytes_sent_ += data.size();
  if (body_.size() > kHighWatermark)
    writable_wanted_ = true;
  session_->resume(*this);
}

void Http3Exchange::end_response_with_trailers(std::span<const http::Header> trailers) {
  if (!head_sent_ || response_ended_)
    return;
  if (has_reader_)
    for (const auto& t : trailers)
      response_trailers_.push_back({arena_.copy(t.name), arena_.copy(t.value)});
  end_response();
}

void Http3Exchange::end_response() {
  if (!head_sent_ || response_ended_)
    return;
  response_ended_ = true;
  if (has_reader_ && !closed_)
    session_->resume(*this);
}

void Http3Exchange::pause_request_body() {
  paused_ = true;
}

void Http3Exchange::resume_request_body() {
  paused_ = false;
  if (unconsumed_ > 0 && !closed_) {
    session_->consume(*this, unconsumed_);
    unconsumed_ = 0;
  }
}

void Http3Exchange::abort() {
  if (!closed_)
    session_->reset(*this, NGHTTP3_H3_INTERNAL_ERROR);
}

nghttp3_ssize Http3Exchange::read_data(nghttp3_vec* vec, size_t veccnt, uint32_t* pflags) {
  size_t skip = handed_;
  size_t n = 0;
  body_.for_each_run([&](std::string_view run) {
    if (n == veccnt)
      return;
    if (skip >= run.size()) {
      skip -= run.size();
      return;
    }
    vec[n].base = reinterpret_cast<uint8_t*>(const_cast<char*>(run.data() + skip));
    vec[n].len = run.size() - skip;
    handed_ += vec[n].len;
    skip = 0;
    ++n;
  });
  if (handed_ == body_.size() && response_ended_) {
    *pflags |= NGHTTP3_DATA_FLAG_EOF;
    if (!response_trailers_.empty()) {
      // The trailers go in a HEADERS frame after the last DATA (RFC 9114 4.1).
      *pflags |= NGHTTP3_DATA_FLAG_NO_END_STREAM;
      thread_local std::vector<nghttp3_nv> nv;
      nv.clear();
      for (const auto& t : response_trailers_)
        nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(t.name.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(t.value.data())), t.name.size(),
                      t.value.size(), NGHTTP3_NV_FLAG_NONE});
      session_->submit_trailers(*this, nv.data(), nv.size());
    }
    return static_cast<nghttp3_ssize>(n);
  }
  if (n == 0) {
    blocked_ = true;
    return NGHTTP3_ERR_WOULDBLOCK;
  }
  return static_cast<nghttp3_ssize>(n);
}

void Http3Exchange::acked(uint64_t len) {
  body_.drain(static_cast<size_t>(len));
  handed_ -= static_cast<size_t>(len);
  if (writable_wanted_ && body_.size() < kLowWatermark) {
    writable_wanted_ = false;
    if (listener_)
      listener_->on_response_writable(*this);
  }
}

} // namespace portico::quic
