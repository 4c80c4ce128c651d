// QuicClient's callbacks from ngtcp2 (the transport) and nghttp3 (HTTP/3 and QPACK).
#include "clock.h"
#include "quic_client.h"

#include <gnutls/crypto.h>

#include <algorithm>

namespace h3load {

namespace {

// A request body is this buffer again and again: nghttp3 may hold its vectors until they are
// acknowledged, and static bytes need no bookkeeping for that.
const uint8_t kBodyBytes[16384] = {};

} // namespace

// ---- ngtcp2 callbacks ----

int QuicClient::on_handshake_completed(ngtcp2_conn*, void* ud) {
  QuicClient* c = self(ud);
  c->handshake_done_ = true;
  if (!c->raw_ && !c->setup_h3())
    return NGTCP2_ERR_CALLBACK_FAILURE;
  c->events_.ready(*c);
  return 0;
}

int QuicClient::on_recv_stream_data(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t,
                                    const uint8_t* data, size_t len, void* ud, void*) {
  QuicClient* c = self(ud);
  bool fin = flags & NGTCP2_STREAM_DATA_FLAG_FIN;
  if (c->raw_) {
    if (RawResult* r = c->raw_result(id)) {
      r->data.append(reinterpret_cast<const char*>(data), len);
      r->fin = r->fin || fin;
    }
    c->credit(id, len);
    return 0;
  }
  nghttp3_ssize used = nghttp3_conn_read_stream(c->h3_, id, data, len, fin);
  if (used < 0) {
    c->app_error_ = nghttp3_err_infer_quic_app_error_code(static_cast<int>(used));
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  c->credit(id, static_cast<uint64_t>(used));
  return 0;
}

int QuicClient::on_acked(ngtcp2_conn*, int64_t id, uint64_t, uint64_t len, void* ud, void*) {
  QuicClient* c = self(ud);
  if (c->h3_ && nghttp3_conn_add_ack_offset(c->h3_, id, len) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int QuicClient::on_stream_close(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t app_error,
                                void* ud, void*) {
  QuicClient* c = self(ud);
  if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
    app_error = NGHTTP3_H3_NO_ERROR;
  if (c->raw_) {
    c->streams_.erase(id);
    return 0;
  }
  int rv = nghttp3_conn_close_stream(c->h3_, id, app_error);
  if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int QuicClient::on_stream_reset(ngtcp2_conn*, int64_t id, uint64_t, uint64_t app_error, void* ud,
                                void*) {
  QuicClient* c = self(ud);
  if (c->raw_) {
    if (RawResult* r = c->raw_result(id)) {
      r->reset = true;
      r->reset_code = app_error;
    }
    return 0;
  }
  auto it = c->streams_.find(id);
  if (it != c->streams_.end())
    it->second.reset_code = app_error;
  if (nghttp3_conn_shutdown_stream_read(c->h3_, id) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int QuicClient::on_stop_sending(ngtcp2_conn*, int64_t id, uint64_t app_error, void* ud, void*) {
  QuicClient* c = self(ud);
  if (c->raw_) {
    if (RawResult* r = c->raw_result(id)) {
      r->stop_sending = true;
      r->stop_code = app_error;
    }
    return 0;
  }
  if (nghttp3_conn_shutdown_stream_read(c->h3_, id) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int QuicClient::on_extend_streams(ngtcp2_conn*, uint64_t, void* ud) {
  QuicClient* c = self(ud);
  c->open_streams();
  return 0;
}

int QuicClient::on_extend_stream_data(ngtcp2_conn*, int64_t id, uint64_t, void* ud, void*) {
  QuicClient* c = self(ud);
  if (c->h3_ && nghttp3_conn_unblock_stream(c->h3_, id) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

void QuicClient::on_rand(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*) {
  gnutls_rnd(GNUTLS_RND_RANDOM, dest, len);
}

int QuicClient::on_new_cid(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void*) {
  cid->datalen = cidlen;
  gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen);
  gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN);
  return 0;
}

// ---- nghttp3 callbacks ----

int QuicClient::h3_stream_close(nghttp3_conn*, int64_t id, uint64_t app_error, void* ud, void*) {
  QuicClient* c = self(ud);
  auto it = c->streams_.find(id);
  if (it == c->streams_.end())
    return 0;
  Stream s = it->second;
  c->streams_.erase(it);
  --c->in_flight_;
  uint64_t code = s.reset_code != 0                  ? s.reset_code
                  : app_error == NGHTTP3_H3_NO_ERROR ? 0
                                                     : app_error;
  c->events_.response(*c, s.status, s.bytes, code, now_s() - s.started);
  return 0;
}

int QuicClient::h3_recv_data(nghttp3_conn*, int64_t id, const uint8_t*, size_t len, void* ud,
                             void*) {
  QuicClient* c = self(ud);
  auto it = c->streams_.find(id);
  if (it != c->streams_.end())
    it->second.bytes += len;
  c->credit(id, len);
  return 0;
}

int QuicClient::h3_deferred_consume(nghttp3_conn*, int64_t id, size_t len, void* ud, void*) {
  QuicClient* c = self(ud);
  c->credit(id, len);
  return 0;
}

int QuicClient::h3_recv_header(nghttp3_conn*, int64_t id, int32_t token, nghttp3_rcbuf*,
                               nghttp3_rcbuf* value, uint8_t, void* ud, void*) {
  QuicClient* c = self(ud);
  if (token != NGHTTP3_QPACK_TOKEN__STATUS)
    return 0;
  auto it = c->streams_.find(id);
  if (it == c->streams_.end())
    return 0;
  nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
  int status = 0;
  for (size_t i = 0; i < v.len; ++i)
    status = status * 10 + (v.base[i] - '0');
  it->second.status = status;
  return 0;
}

int QuicClient::h3_stop_sending(nghttp3_conn*, int64_t id, uint64_t app_error, void* ud, void*) {
  QuicClient* c = self(ud);
  ngtcp2_conn_shutdown_stream_read(c->conn_, id, app_error);
  return 0;
}

int QuicClient::h3_reset_stream(nghttp3_conn*, int64_t id, uint64_t app_error, void* ud, void*) {
  QuicClient* c = self(ud);
  ngtcp2_conn_shutdown_stream_write(c->conn_, id, app_error);
  return 0;
}

nghttp3_ssize QuicClient::h3_read_body(nghttp3_conn*, int64_t id, nghttp3_vec* vec, size_t,
                                       uint32_t* flags, void* ud, void*) {
  QuicClient* c = self(ud);
  auto it = c->streams_.find(id);
  if (it == c->streams_.end()) {
    *flags |= NGHTTP3_DATA_FLAG_EOF;
    return 0;
  }
  Stream& s = it->second;
  size_t n = std::min(s.body_left, sizeof kBodyBytes);
  s.body_left -= n;
  vec[0].base = const_cast<uint8_t*>(kBodyBytes);
  vec[0].len = n;
  if (s.body_left == 0)
    *flags |= NGHTTP3_DATA_FLAG_EOF;
  return 1;
}

} // namespace h3load
