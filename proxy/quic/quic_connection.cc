#include "quic/quic_connection.h"

#include "core/error_log.h"
#include "core/proxy_protocol.h"
#include "quic/quic_endpoint.h"
#include "quic/quic_tls_context.h"

#include <cstring>
#include <ctime>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

namespace portico::quic {

namespace {
// Packets written per flush: the rest at the next pass, so one connection cannot hold the
// loop (ngtcp2's pacing says when; its send quantum how much).
constexpr size_t kPacketsPerFlush = 64;
// HTTP/3's NO_ERROR (RFC 9114 8.1).
constexpr uint64_t kH3NoError = 0x100;

ngtcp2_tstamp now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<ngtcp2_tstamp>(ts.tv_sec) * NGTCP2_SECONDS +
         static_cast<ngtcp2_tstamp>(ts.tv_nsec);
}

const ngtcp2_callbacks& callbacks() {
  static const ngtcp2_callbacks cbs = [] {
    ngtcp2_callbacks c{};
    c.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
    c.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    c.encrypt = ngtcp2_crypto_encrypt_cb;
    c.decrypt = ngtcp2_crypto_decrypt_cb;
    c.hp_mask = ngtcp2_crypto_hp_mask_cb;
    c.update_key = ngtcp2_crypto_update_key_cb;
    c.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    c.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    c.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    c.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
    return c;
  }();
  return cbs;
}
} // namespace

ngtcp2_path PacketPath::path() const {
  return ngtcp2_path{
      {const_cast<sockaddr*>(reinterpret_cast<const sockaddr*>(&local)), local_len},
      {const_cast<sockaddr*>(reinterpret_cast<const sockaddr*>(&remote)), remote_len},
      nullptr};
}

QuicConnection::QuicConnection(QuicEndpoint& ep, const PacketPath& path)
    : ep_(ep), path_(path), peer_text_(core::proxy_protocol::address_text(path.remote)),
      tls_ctx_(ep.tls()) {
  ev_init(&timer_, timer_cb);
  timer_.data = this;
}

QuicConnection* QuicConnection::create(QuicEndpoint& ep, const ngtcp2_pkt_hd& hd,
                                       const ngtcp2_cid* odcid, const PacketPath& path) {
  auto* c = new QuicConnection(ep, path);
  if (!c->init(hd, odcid)) {
    delete c;
    return nullptr;
  }
  return c;
}

bool QuicConnection::init(const ngtcp2_pkt_hd& hd, const ngtcp2_cid* odcid) {
  ngtcp2_callbacks cbs = callbacks();
  cbs.handshake_completed = on_handshake_completed;
  cbs.recv_stream_data = on_recv_stream_data;
  cbs.acked_stream_data_offset = on_acked_stream_data_offset;
  cbs.stream_close = on_stream_close;
  cbs.stream_reset = on_stream_reset;
  cbs.stream_stop_sending = on_stream_stop_sending;
  cbs.extend_max_stream_data = on_extend_max_stream_data;
  cbs.extend_max_remote_streams_bidi = on_extend_max_remote_streams_bidi;
  cbs.rand = on_rand;
  cbs.get_new_connection_id = on_get_new_connection_id;
  cbs.remove_connection_id = on_remove_connection_id;

  const config::QuicConfig& cfg = ep_.config();
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now_ns();
  settings.max_stream_window = cfg.stream_window;
  settings.max_window = cfg.connection_window;
  settings.handshake_timeout = 10 * NGTCP2_SECONDS;

  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_remote = cfg.stream_window;
  params.initial_max_stream_data_uni = 64 * 1024; // the client's control and QPACK streams
  params.initial_max_data = cfg.connection_window;
  params.initial_max_streams_bidi = cfg.max_streams;
  params.initial_max_streams_uni = 3;
  params.max_idle_timeout = static_cast<ngtcp2_duration>(cfg.idle_timeout * NGTCP2_SECONDS);
  params.active_connection_id_limit = 4;
  params.stateless_reset_token_present = 1;
  ngtcp2_cid scid = new_cid(ep_.worker());
  if (ngtcp2_crypto_generate_stateless_reset_token(
          params.stateless_reset_token, ep_.secret().data(), ep_.secret().size(), &scid) != 0)
    return false;
  if (odcid) {
    params.original_dcid = *odcid;
    params.retry_scid = hd.dcid; // the Retry's source ID, which this Initial is sent to
    params.retry_scid_present = 1;
  } else {
    params.original_dcid = hd.dcid;
  }
  original_dcid_ = hd.dcid;

  ngtcp2_path p = path_.path();
  if (ngtcp2_conn_server_new(&conn_, &hd.scid, &scid, &p, hd.version, &cbs, &settings, &params,
                             nullptr, this) != 0)
    return false;
  ref_.get_conn = get_conn;
  ref_.user_data = this;
  tls_ = tls_ctx_->new_session(&ref_);
  if (!tls_)
    return false;
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  ep_.add_cid(scid, this);
  ep_.add_cid(original_dcid_, this);
  return true;
}

QuicConnection::~QuicConnection() {
  ev_timer_stop(ep_.context().loop(), &timer_);
  h3_.reset(); // its exchanges go before the connection they ask things of
  if (conn_)
    ngtcp2_conn_del(conn_);
  if (tls_)
    gnutls_deinit(tls_);
}

ngtcp2_conn* QuicConnection::get_conn(ngtcp2_crypto_conn_ref* ref) {
  return self(ref->user_data)->conn_;
}

uint16_t QuicConnection::listener() const {
  return ep_.listener();
}

bool QuicConnection::on_packet(const PacketPath& path, const ngtcp2_pkt_info& pi,
                               const uint8_t* data, size_t len) {
  switch (state_) {
  case State::CLOSING:
    // Each packet that still comes gets the CONNECTION_CLOSE again (RFC 9000 10.2.1).
    if (!close_packet_.empty())
      ep_.send(path, close_packet_.data(), close_packet_.size());
    return true;
  case State::DRAINING:
  case State::GONE: return true;
  case State::OPEN: break;
  }
  ngtcp2_path p = path.path();
  int rv = ngtcp2_conn_read_pkt(conn_, &p, &pi, data, len, now_ns());
  if (rv != 0) {
    switch (rv) {
    case NGTCP2_ERR_DRAINING: start_draining_period(); return false;
    case NGTCP2_ERR_DROP_CONN: finish(); return false;
    case NGTCP2_ERR_CRYPTO: {
      ngtcp2_connection_close_error e;
      ngtcp2_connection_close_error_set_transport_error_tls_alert(
          &e, ngtcp2_conn_get_tls_alert(conn_), nullptr, 0);
      fail(e);
      return false;
    }
    default: {
      ngtcp2_connection_close_error e;
      if (app_error_ != 0)
        ngtcp2_connection_close_error_set_application_error(&e, app_error_, nullptr, 0);
      else
        ngtcp2_connection_close_error_set_transport_error_liberr(&e, rv, nullptr, 0);
      fail(e);
      return false;
    }
    }
  }
  // The client's address may have changed (a NAT rebinding, a migration ngtcp2 validated):
  // answers go where it is now.
  path_ = path;
  want_write();
  return true;
}

void QuicConnection::want_write() {
  if (state_ == State::OPEN)
    ep_.context().deferred().add(this);
}

void QuicConnection::run_deferred() {
  write();
}

void QuicConnection::write() {
  if (state_ != State::OPEN)
    return;
  // Packets go out in batches of equal sizes (the last may be shorter) and one ECN codepoint:
  // one send for many datagrams.
  uint8_t* batch = ep_.batch_buffer();
  size_t used = 0;
  size_t segment = 0;
  size_t segments = 0;
  uint32_t batch_ecn = 0;
  auto flush = [&] {
    if (used > 0)
      ep_.send_batch(path_, batch, used, segment, batch_ecn);
    used = 0;
    segments = 0;
  };
  size_t max_len =
      std::min<size_t>(NGTCP2_MAX_UDP_PAYLOAD_SIZE, ngtcp2_conn_get_max_tx_udp_payload_size(conn_));
  ngtcp2_tstamp ts = now_ns();
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  for (size_t sent = 0; sent < kPacketsPerFlush;) {
    if (QuicEndpoint::kBatchBytes - used < max_len || segments == QuicEndpoint::kMaxSegments)
      flush();
    uint8_t* buf = batch + used;
    int64_t id = -1;
    int fin = 0;
    nghttp3_vec vec[16];
    int64_t count = 0;
    if (h3_ && ngtcp2_conn_get_max_data_left(conn_) > 0) {
      count = h3_->next_output(&id, &fin, vec, std::size(vec));
      if (count < 0) {
        flush();
        ngtcp2_connection_close_error e;
        ngtcp2_connection_close_error_set_application_error(
            &e, nghttp3_err_infer_quic_app_error_code(static_cast<int>(count)), nullptr, 0);
        fail(e);
        return;
      }
    }
    ngtcp2_ssize taken = -1;
    uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_writev_stream(conn_, &ps.path, &pi, buf, max_len, &taken, flags,
                                               id, reinterpret_cast<ngtcp2_vec*>(vec),
                                               static_cast<size_t>(count), ts);
    if (n < 0) {
      switch (n) {
      case NGTCP2_ERR_STREAM_DATA_BLOCKED: h3_->blocked(id); continue;
      case NGTCP2_ERR_STREAM_SHUT_WR: h3_->write_shut(id); continue;
      case NGTCP2_ERR_WRITE_MORE:
        if (h3_->wrote(id, static_cast<size_t>(taken)) != 0) {
          flush();
          ngtcp2_connection_close_error e;
          ngtcp2_connection_close_error_set_application_error(&e, NGHTTP3_H3_INTERNAL_ERROR,
                                                              nullptr, 0);
          fail(e);
          return;
        }
        continue;
      default: {
        flush();
        ngtcp2_connection_close_error e;
        ngtcp2_connection_close_error_set_transport_error_liberr(&e, static_cast<int>(n), nullptr,
                                                                 0);
        fail(e);
        return;
      }
      }
    }
    if (taken >= 0 && h3_ && h3_->wrote(id, static_cast<size_t>(taken)) != 0) {
      flush();
      ngtcp2_connection_close_error e;
      ngtcp2_connection_close_error_set_application_error(&e, NGHTTP3_H3_INTERNAL_ERROR, nullptr,
                                                          0);
      fail(e);
      return;
    }
    if (n == 0)
      break; // nothing more to send now (or the congestion window is full)
    size_t len = static_cast<size_t>(n);
    if (used > 0 && (len > segment || pi.ecn != batch_ecn)) {
      // It cannot join the batch: the batch goes, and this packet starts the next one.
      size_t at = used;
      flush();
      std::memmove(batch, batch + at, len);
    }
    if (used == 0) {
      segment = len;
      batch_ecn = pi.ecn;
    }
    used += len;
    ++segments;
    if (len < segment)
      flush(); // a shorter packet ends a batch
    ++sent;
    if (sent == kPacketsPerFlush)
      want_write(); // more may be waiting: the next pass
  }
  flush();
  ngtcp2_conn_update_pkt_tx_time(conn_, ts);
  // A graceful stop ends here: the GOAWAY is out and every stream is closed (all of its
  // bytes acknowledged).
  if (draining_ && h3_ && h3_->idle()) {
    ngtcp2_connection_close_error e;
    ngtcp2_connection_close_error_set_application_error(&e, kH3NoError, nullptr, 0);
    fail(e);
    return;
  }
  arm_timer();
}

void QuicConnection::arm_timer() {
  ngtcp2_tstamp expiry = ngtcp2_conn_get_expiry(conn_);
  ngtcp2_tstamp now = now_ns();
  double after = expiry <= now ? 1e-9 : static_cast<double>(expiry - now) / NGTCP2_SECONDS;
  timer_.repeat = after;
  ev_timer_again(ep_.context().loop(), &timer_);
}

void QuicConnection::timer_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<QuicConnection*>(w->data)->on_timer();
}

void QuicConnection::on_timer() {
  if (state_ == State::CLOSING || state_ == State::DRAINING) {
    finish(); // the closing or draining period is over
    return;
  }
  if (state_ != State::OPEN)
    return;
  int rv = ngtcp2_conn_handle_expiry(conn_, now_ns());
  if (rv == NGTCP2_ERR_IDLE_CLOSE) {
    finish(); // silently, as the idle timeout says (RFC 9000 10.1)
    return;
  }
  if (rv != 0) {
    ngtcp2_connection_close_error e;
    ngtcp2_connection_close_error_set_transport_error_liberr(&e, rv, nullptr, 0);
    fail(e);
    return;
  }
  write();
}

void QuicConnection::fail(const ngtcp2_connection_close_error& e) {
  if (state_ != State::OPEN)
    return;
  uint8_t buf[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi;
  ngtcp2_ssize n =
      ngtcp2_conn_write_connection_close(conn_, &ps.path, &pi, buf, sizeof buf, &e, now_ns());
  if (n > 0) {
    close_packet_.assign(buf, buf + n);
    ep_.send(path_, buf, static_cast<size_t>(n));
  }
  start_closing_period();
}

void QuicConnection::start_closing_period() {
  state_ = State::CLOSING;
  if (h3_)
    h3_->abort_all();
  timer_.repeat = 3.0 * static_cast<double>(ngtcp2_conn_get_pto(conn_)) / NGTCP2_SECONDS;
  ev_timer_again(ep_.context().loop(), &timer_);
}

void QuicConnection::start_draining_period() {
  if (state_ != State::OPEN)
    return;
  state_ = State::DRAINING;
  if (h3_)
    h3_->abort_all();
  timer_.repeat = 3.0 * static_cast<double>(ngtcp2_conn_get_pto(conn_)) / NGTCP2_SECONDS;
  ev_timer_again(ep_.context().loop(), &timer_);
}

void QuicConnection::finish() {
  if (state_ == State::GONE)
    return;
  State was = state_;
  state_ = State::GONE;
  ev_timer_stop(ep_.context().loop(), &timer_);
  if (was == State::OPEN && h3_)
    h3_->abort_all();
  std::vector<ngtcp2_cid> scids(ngtcp2_conn_get_num_scid(conn_));
  ngtcp2_conn_get_scid(conn_, scids.data());
  for (const auto& c : scids)
    ep_.remove_cid(c);
  ep_.remove_cid(original_dcid_);
  ep_.gone(this);
}

void QuicConnection::drain() {
  if (draining_)
    return;
  draining_ = true;
  if (h3_ && handshake_done_) {
    h3_->drain();
    want_write(); // the GOAWAY; the close once no stream is left (write())
  } else {
    close_now(); // no request was ever made on it
  }
}

void QuicConnection::close_now() {
  if (state_ == State::OPEN) {
    ngtcp2_connection_close_error e;
    ngtcp2_connection_close_error_set_application_error(&e, kH3NoError, nullptr, 0);
    fail(e);
  }
  finish();
}

// ---- for Http3Session ----

void QuicConnection::credit(int64_t id, size_t n) {
  ngtcp2_conn_extend_max_stream_offset(conn_, id, n);
  ngtcp2_conn_extend_max_offset(conn_, n);
  want_write();
}

void QuicConnection::shutdown_stream(int64_t id, uint64_t app_error) {
  ngtcp2_conn_shutdown_stream(conn_, id, app_error);
  want_write();
}

void QuicConnection::shutdown_stream_read(int64_t id, uint64_t app_error) {
  ngtcp2_conn_shutdown_stream_read(conn_, id, app_error);
  want_write();
}

bool QuicConnection::open_uni_stream(int64_t* id) {
  return ngtcp2_conn_open_uni_stream(conn_, id, nullptr) == 0;
}

// ---- ngtcp2 callbacks ----

int QuicConnection::on_handshake_completed(ngtcp2_conn*, void* ud) {
  QuicConnection* c = self(ud);
  c->handshake_done_ = true;
  c->ep_.handshake_finished();
  c->h3_ = std::make_unique<Http3Session>(*c, c->ep_.context(), c->ep_.config().max_streams);
  if (!c->h3_->start())
    return NGTCP2_ERR_CALLBACK_FAILURE;
  if (c->draining_)
    c->h3_->drain();
  return 0;
}

int QuicConnection::on_recv_stream_data(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t,
                                        const uint8_t* data, size_t len, void* ud, void*) {
  QuicConnection* c = self(ud);
  if (!c->h3_)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  int64_t credit = c->h3_->on_stream_data(id, data, len, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
  if (credit < 0) {
    // Closed with HTTP/3's code for it once ngtcp2 has returned (on_packet).
    c->app_error_ = nghttp3_err_infer_quic_app_error_code(static_cast<int>(credit));
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  if (credit > 0) {
    ngtcp2_conn_extend_max_stream_offset(c->conn_, id, static_cast<uint64_t>(credit));
    ngtcp2_conn_extend_max_offset(c->conn_, static_cast<uint64_t>(credit));
  }
  return 0;
}

int QuicConnection::on_acked_stream_data_offset(ngtcp2_conn*, int64_t id, uint64_t, uint64_t len,
                                                void* ud, void*) {
  QuicConnection* c = self(ud);
  if (c->h3_ && c->h3_->acked(id, len) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int QuicConnection::on_stream_close(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t app_error,
                                    void* ud, void*) {
  QuicConnection* c = self(ud);
  if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
    app_error = NGHTTP3_H3_NO_ERROR;
  if (c->h3_ && c->h3_->stream_closed(id, app_error) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  // max_streams bounds the requests open at once, not those of the connection's life: each
  // that ends lets the client open another (ngtcp2 sends MAX_STREAMS as it sees fit).
  if (ngtcp2_is_bidi_stream(id) && !ngtcp2_conn_is_local_stream(c->conn_, id))
    ngtcp2_conn_extend_max_streams_bidi(c->conn_, 1);
  return 0;
}

int QuicConnection::on_stream_reset(ngtcp2_conn*, int64_t id, uint64_t, uint64_t, void* ud, void*) {
  QuicConnection* c = self(ud);
  if (c->h3_ && c->h3_->read_reset(id) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int QuicConnection::on_stream_stop_sending(ngtcp2_conn*, int64_t id, uint64_t, void* ud, void*) {
  QuicConnection* c = self(ud);
  if (c->h3_ && c->h3_->write_stopped(id) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int QuicConnection::on_extend_max_stream_data(ngtcp2_conn*, int64_t id, uint64_t, void* ud, void*) {
  QuicConnection* c = self(ud);
  if (c->h3_)
    c->h3_->unblocked(id);
  return 0;
}

int QuicConnection::on_extend_max_remote_streams_bidi(ngtcp2_conn*, uint64_t max_streams,
                                                      void* ud) {
  QuicConnection* c = self(ud);
  if (c->h3_)
    c->h3_->max_client_streams(max_streams);
  return 0;
}

void QuicConnection::on_rand(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*) {
  random_bytes(dest, len);
}

int QuicConnection::on_get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t,
                                             void* ud) {
  QuicConnection* c = self(ud);
  *cid = new_cid(c->ep_.worker());
  if (ngtcp2_crypto_generate_stateless_reset_token(token, c->ep_.secret().data(),
                                                   c->ep_.secret().size(), cid) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  c->ep_.add_cid(*cid, c);
  return 0;
}

int QuicConnection::on_remove_connection_id(ngtcp2_conn*, const ngtcp2_cid* cid, void* ud) {
  self(ud)->ep_.remove_cid(*cid);
  return 0;
}

} // namespace portico::quic
