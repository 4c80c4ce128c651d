#include "quic_client.h"

#include "clock.h"

#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <netinet/in.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace h3load {

namespace {

constexpr unsigned char kH3[] = "h3";
constexpr const char* kPriority =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"
    "+AES-256-GCM:+CHACHA20-POLY1305:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1";
// HTTP/3's NO_ERROR (RFC 9114 8.1).
constexpr uint64_t kH3NoError = 0x100;
constexpr size_t kPacketsPerWrite = 64;

nghttp3_nv field(const char* name, const std::string& value) {
  return nghttp3_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name)),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), std::strlen(name),
                    value.size(), NGHTTP3_NV_FLAG_NONE};
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

} // namespace

QuicClient::QuicClient(struct ev_loop* loop, const Target& target, ClientEvents& events, bool raw)
    : loop_(loop), target_(target), events_(events), raw_(raw) {
  ev_init(&read_watcher_, read_cb);
  read_watcher_.data = this;
  ev_init(&timer_, timer_cb);
  timer_.data = this;
}

QuicClient::~QuicClient() {
  ev_io_stop(loop_, &read_watcher_);
  ev_timer_stop(loop_, &timer_);
  if (h3_)
    nghttp3_conn_del(h3_);
  if (conn_)
    ngtcp2_conn_del(conn_);
  if (tls_)
    gnutls_deinit(tls_);
  if (cred_)
    gnutls_certificate_free_credentials(cred_);
  if (fd_ >= 0)
    ::close(fd_);
}

bool QuicClient::open_socket(std::string* error) {
  int fd = ::socket(target_.addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 ||
      ::connect(fd, reinterpret_cast<const sockaddr*>(&target_.addr), target_.addr_len) != 0) {
    *error = std::string("udp socket: ") + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return false;
  }
  if (fd_ >= 0) {
    ev_io_stop(loop_, &read_watcher_);
    ::close(fd_);
  }
  fd_ = fd;
  local_len_ = sizeof local_;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local_), &local_len_);
  ev_io_set(&read_watcher_, fd_, EV_READ);
  return true;
}

uint16_t QuicClient::local_port() const {
  return ntohs(reinterpret_cast<const sockaddr_in*>(&local_)->sin_port);
}

bool QuicClient::migrate() {
  std::string error;
  if (!open_socket(&error))
    return false;
  ev_io_start(loop_, &read_watcher_);
  ngtcp2_path path{{reinterpret_cast<sockaddr*>(&local_), local_len_},
                   {reinterpret_cast<sockaddr*>(&target_.addr), target_.addr_len},
                   nullptr};
  if (ngtcp2_conn_initiate_immediate_migration(conn_, &path, now_ns()) != 0)
    return false;
  ++migrations_;
  return true;
}

bool QuicClient::start(std::string* error) {
  if (!open_socket(error))
    return false;

  ngtcp2_callbacks cbs{};
  cbs.client_initial = ngtcp2_crypto_client_initial_cb;
  cbs.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cbs.encrypt = ngtcp2_crypto_encrypt_cb;
  cbs.decrypt = ngtcp2_crypto_decrypt_cb;
  cbs.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cbs.recv_retry = ngtcp2_crypto_recv_retry_cb;
  cbs.update_key = ngtcp2_crypto_update_key_cb;
  cbs.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cbs.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cbs.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cbs.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  cbs.handshake_completed = on_handshake_completed;
  cbs.recv_stream_data = on_recv_stream_data;
  cbs.acked_stream_data_offset = on_acked;
  cbs.stream_close = on_stream_close;
  cbs.stream_reset = on_stream_reset;
  cbs.stream_stop_sending = on_stop_sending;
  cbs.extend_max_local_streams_bidi = on_extend_streams;
  cbs.extend_max_stream_data = on_extend_stream_data;
  cbs.rand = on_rand;
  cbs.get_new_connection_id = on_new_cid;

  ngtcp2_cid dcid, scid;
  dcid.datalen = 18;
  scid.datalen = 17;
  gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen);
  gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);

  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now_ns();
  settings.handshake_timeout =
      static_cast<ngtcp2_duration>(target_.handshake_timeout * NGTCP2_SECONDS);
  settings.max_window = 24 * 1024 * 1024;
  settings.max_stream_window = 16 * 1024 * 1024;

  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = 1024 * 1024;
  params.initial_max_stream_data_uni = 1024 * 1024;
  params.initial_max_data = 8 * 1024 * 1024;
  params.initial_max_streams_uni = 3;
  params.max_idle_timeout = 30 * NGTCP2_SECONDS;
  params.active_connection_id_limit = 4;

  ngtcp2_path path{{reinterpret_cast<sockaddr*>(&local_), local_len_},
                   {reinterpret_cast<sockaddr*>(&target_.addr), target_.addr_len},
                   nullptr};
  if (int rv = ngtcp2_conn_client_new(&conn_, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cbs,
                                      &settings, &params, nullptr, this);
      rv != 0) {
    *error = std::string("ngtcp2_conn_client_new: ") + ngtcp2_strerror(rv);
    return false;
  }

  // No certificate check: the peer is a test or bench server on loopback.
  gnutls_certificate_allocate_credentials(&cred_);
  gnutls_datum_t alpn{const_cast<unsigned char*>(kH3), 2};
  if (gnutls_init(&tls_, GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA) != 0 ||
      gnutls_priority_set_direct(tls_, kPriority, nullptr) != 0 ||
      ngtcp2_crypto_gnutls_configure_client_session(tls_) != 0 ||
      gnutls_credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, cred_) != 0 ||
      gnutls_alpn_set_protocols(tls_, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0 ||
      gnutls_server_name_set(tls_, GNUTLS_NAME_DNS, target_.sni.data(), target_.sni.size()) != 0) {
    *error = "gnutls client session";
    return false;
  }
  ref_.get_conn = get_conn;
  ref_.user_data = this;
  gnutls_session_set_ptr(tls_, &ref_);
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);

  ev_io_start(loop_, &read_watcher_);
  write();
  return true;
}

const ngtcp2_transport_params* QuicClient::remote_params() const {
  return conn_ ? ngtcp2_conn_get_remote_transport_params(conn_) : nullptr;
}

bool QuicClient::raw_streams_finished() const {
  if (!raw_pending_.empty())
    return false;
  for (const auto& [id, r] : raw_results_)
    if (!r.fin && !r.reset)
      return false;
  return true;
}

bool QuicClient::setup_h3() {
  nghttp3_callbacks cbs{};
  cbs.stream_close = h3_stream_close;
  cbs.recv_data = h3_recv_data;
  cbs.deferred_consume = h3_deferred_consume;
  cbs.recv_header = h3_recv_header;
  cbs.stop_sending = h3_stop_sending;
  cbs.reset_stream = h3_reset_stream;
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  if (nghttp3_conn_client_new(&h3_, &cbs, &settings, nghttp3_mem_default(), this) != 0)
    return false;
  int64_t control, encoder, decoder;
  return ngtcp2_conn_open_uni_stream(conn_, &control, nullptr) == 0 &&
         nghttp3_conn_bind_control_stream(h3_, control) == 0 &&
         ngtcp2_conn_open_uni_stream(conn_, &encoder, nullptr) == 0 &&
         ngtcp2_conn_open_uni_stream(conn_, &decoder, nullptr) == 0 &&
         nghttp3_conn_bind_qpack_streams(h3_, encoder, decoder) == 0;
}

void QuicClient::open_streams() {
  if (!handshake_done_ || closed_)
    return;
  if (raw_) {
    while (!raw_pending_.empty()) {
      RawStream& r = raw_pending_.front();
      if (r.migrate) {
        for (const auto& [id, res] : raw_results_)
          if (!res.fin && !res.reset)
            return; // not before the streams in front of it are answered
        if (!migrate()) {
          fail("migration", 0);
          return;
        }
        raw_pending_.erase(raw_pending_.begin());
        continue;
      }
      int64_t id;
      int rv = r.bidi ? ngtcp2_conn_open_bidi_stream(conn_, &id, nullptr)
                      : ngtcp2_conn_open_uni_stream(conn_, &id, nullptr);
      if (rv != 0)
        return; // no stream credit yet: on_extend_streams
      Stream& s = streams_[id];
      s.raw = std::move(r.bytes);
      s.raw_fin = r.fin;
      if (r.bidi)
        raw_results_[id];
      raw_pending_.erase(raw_pending_.begin());
    }
    return;
  }
  while (h3_ && in_flight_ < concurrency_ && ngtcp2_conn_get_streams_bidi_left(conn_) > 0 &&
         want_request()) {
    int64_t id;
    if (ngtcp2_conn_open_bidi_stream(conn_, &id, nullptr) != 0)
      return;
    Stream& s = streams_[id];
    s.started = now_s();
    s.body_left = request_.body;
    std::string length = std::to_string(request_.body);
    std::string scheme = "https";
    nghttp3_nv nva[] = {
        field(":method", request_.method),      field(":scheme", scheme),
        field(":authority", target_.authority), field(":path", request_.path),
        field("content-length", length),
    };
    size_t n = request_.body > 0 || request_.method == "POST" ? 5 : 4;
    nghttp3_data_reader dr{h3_read_body};
    if (nghttp3_conn_submit_request(h3_, id, nva, n, n == 5 ? &dr : nullptr, nullptr) != 0) {
      fail("submit request", NGHTTP3_H3_INTERNAL_ERROR);
      return;
    }
    ++in_flight_;
  }
}

void QuicClient::read_cb(struct ev_loop*, ev_io* w, int) {
  static_cast<QuicClient*>(w->data)->on_readable();
}

void QuicClient::on_readable() {
  uint8_t buf[65536];
  for (int i = 0; i < 64 && !closed_; ++i) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0)
      break; // EAGAIN, or an ICMP error (nobody listening): the timer ends it
    bytes_received_ += static_cast<uint64_t>(n);
    if (silent_)
      continue;
    ngtcp2_path path{{reinterpret_cast<sockaddr*>(&local_), local_len_},
                     {reinterpret_cast<sockaddr*>(&target_.addr), target_.addr_len},
                     nullptr};
    ngtcp2_pkt_info pi{};
    int rv = ngtcp2_conn_read_pkt(conn_, &path, &pi, buf, static_cast<size_t>(n), now_ns());
    if (rv == NGTCP2_ERR_DRAINING) {
      note_peer_close();
      return;
    }
    if (rv != 0) {
      fail(std::string("read: ") + ngtcp2_strerror(rv), app_error_);
      return;
    }
  }
  write();
}

void QuicClient::note_peer_close() {
  ngtcp2_connection_close_error e;
  ngtcp2_conn_get_connection_close_error(conn_, &e);
  std::string kind =
      e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ? "application" : "transport";
  finish("peer " + kind + " " + hex(e.error_code));
}

void QuicClient::write() {
  if (closed_ || (silent_ && bytes_sent_ > 0))
    return;
  open_streams();
  uint8_t buf[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  size_t max_len = std::min(sizeof buf, ngtcp2_conn_get_max_tx_udp_payload_size(conn_));
  ngtcp2_tstamp ts = now_ns();
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  size_t sent = 0;
  if (raw_) {
    for (auto& [id, s] : streams_) {
      while (s.raw_off < s.raw.size() || (s.raw_fin && s.raw_off == s.raw.size())) {
        if (!write_raw_stream(id, s, ps, buf, max_len, ts))
          break;
        ++sent;
      }
      if (closed_)
        return;
    }
  }
  while (sent < kPacketsPerWrite) {
    int64_t id = -1;
    int fin = 0;
    nghttp3_vec vec[16];
    nghttp3_ssize count = 0;
    if (h3_ && ngtcp2_conn_get_max_data_left(conn_) > 0) {
      count = nghttp3_conn_writev_stream(h3_, &id, &fin, vec, std::size(vec));
      if (count < 0) {
        fail("nghttp3 write", nghttp3_err_infer_quic_app_error_code(static_cast<int>(count)));
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
      case NGTCP2_ERR_STREAM_DATA_BLOCKED: nghttp3_conn_block_stream(h3_, id); continue;
      case NGTCP2_ERR_STREAM_SHUT_WR: nghttp3_conn_shutdown_stream_write(h3_, id); continue;
      case NGTCP2_ERR_WRITE_MORE:
        nghttp3_conn_add_write_offset(h3_, id, static_cast<size_t>(taken));
        continue;
      default: fail(std::string("write: ") + ngtcp2_strerror(static_cast<int>(n)), 0); return;
      }
    }
    if (taken >= 0 && h3_)
      nghttp3_conn_add_write_offset(h3_, id, static_cast<size_t>(taken));
    if (n == 0)
      break;
    send_packet(buf, static_cast<size_t>(n));
    ++sent;
  }
  ngtcp2_conn_update_pkt_tx_time(conn_, ts);
  arm_timer();
}

bool QuicClient::write_raw_stream(int64_t id, Stream& s, ngtcp2_path_storage& ps, uint8_t* buf,
                                  size_t len, ngtcp2_tstamp ts) {
  ngtcp2_vec v{reinterpret_cast<uint8_t*>(s.raw.data()) + s.raw_off, s.raw.size() - s.raw_off};
  ngtcp2_ssize taken = -1;
  uint32_t flags = s.raw_fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0;
  ngtcp2_pkt_info pi;
  ngtcp2_ssize n =
      ngtcp2_conn_writev_stream(conn_, &ps.path, &pi, buf, len, &taken, flags, id, &v, 1, ts);
  if (n < 0) {
    if (n != NGTCP2_ERR_STREAM_DATA_BLOCKED && n != NGTCP2_ERR_STREAM_SHUT_WR)
      fail(std::string("write: ") + ngtcp2_strerror(static_cast<int>(n)), 0);
    return false;
  }
  if (taken >= 0) {
    s.raw_off += static_cast<size_t>(taken);
    if (s.raw_off == s.raw.size() && s.raw_fin)
      s.raw_fin = false; // the FIN went with it
  }
  if (n == 0)
    return false;
  send_packet(buf, static_cast<size_t>(n));
  return true;
}

void QuicClient::send_packet(const uint8_t* data, size_t len) {
  if (::send(fd_, data, len, 0) == static_cast<ssize_t>(len))
    bytes_sent_ += len;
  // A full socket buffer drops the datagram, as a network would: QUIC recovers.
}

void QuicClient::arm_timer() {
  if (closed_)
    return;
  ngtcp2_tstamp expiry = ngtcp2_conn_get_expiry(conn_);
  ngtcp2_tstamp now = now_ns();
  timer_.repeat = expiry <= now ? 1e-9 : static_cast<double>(expiry - now) / NGTCP2_SECONDS;
  ev_timer_again(loop_, &timer_);
}

void QuicClient::timer_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<QuicClient*>(w->data)->on_timer();
}

void QuicClient::on_timer() {
  if (closed_)
    return;
  if (silent_)
    return; // it answers nothing, retransmits nothing: the caller's timer ends it
  int rv = ngtcp2_conn_handle_expiry(conn_, now_ns());
  if (rv == NGTCP2_ERR_IDLE_CLOSE || rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
    finish(rv == NGTCP2_ERR_IDLE_CLOSE ? "idle timeout" : "handshake timeout");
    return;
  }
  if (rv != 0) {
    fail(std::string("timer: ") + ngtcp2_strerror(rv), 0);
    return;
  }
  write();
}

void QuicClient::close() {
  ngtcp2_connection_close_error e;
  ngtcp2_connection_close_error_set_application_error(&e, kH3NoError, nullptr, 0);
  close_with(e, "closed");
}

void QuicClient::fail(const std::string& why, uint64_t app_error) {
  ngtcp2_connection_close_error e;
  if (app_error != 0)
    ngtcp2_connection_close_error_set_application_error(&e, app_error, nullptr, 0);
  else
    ngtcp2_connection_close_error_set_transport_error(&e, NGTCP2_INTERNAL_ERROR, nullptr, 0);
  close_with(e, "error: " + why);
}

void QuicClient::close_with(const ngtcp2_connection_close_error& e, const std::string& why) {
  if (closed_)
    return;
  uint8_t buf[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi;
  ngtcp2_ssize n =
      ngtcp2_conn_write_connection_close(conn_, &ps.path, &pi, buf, sizeof buf, &e, now_ns());
  if (n > 0)
    send_packet(buf, static_cast<size_t>(n));
  finish(why);
}

void QuicClient::finish(const std::string& why) {
  if (closed_)
    return;
  closed_ = true;
  close_reason_ = why;
  ev_io_stop(loop_, &read_watcher_);
  ev_timer_stop(loop_, &timer_);
  // Requests still open end here, unanswered.
  for (auto& [id, s] : streams_)
    if (!raw_ && s.started > 0)
      events_.response(*this, s.status, s.bytes, s.reset_code != 0 ? s.reset_code : 1,
                       now_s() - s.started);
  streams_.clear();
  in_flight_ = 0;
  events_.closed(*this);
}

void QuicClient::credit(int64_t id, uint64_t n) {
  ngtcp2_conn_extend_max_stream_offset(conn_, id, n);
  ngtcp2_conn_extend_max_offset(conn_, n);
}

QuicClient::RawResult* QuicClient::raw_result(int64_t id) {
  auto it = raw_results_.find(id);
  return it == raw_results_.end() ? nullptr : &it->second;
}

ngtcp2_conn* QuicClient::get_conn(ngtcp2_crypto_conn_ref* ref) {
  return self(ref->user_data)->conn_;
}

} // namespace h3load
