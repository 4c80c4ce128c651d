#include "quic/quic_endpoint.h"

#include "core/error_log.h"
#include "quic/quic_tls_context.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::quic {

namespace {
// Datagrams read per wakeup: the others wait for the next pass, after the loop's other work.
constexpr int kDatagramsPerWakeup = 64;
// Datagrams one recvmmsg() call may return.
constexpr int kDatagramsPerCall = 16;
constexpr size_t kMaxDatagram = 65536;
// A Retry token is good this long: one round trip, with room for a slow client.
constexpr ngtcp2_duration kRetryTokenLife = 10 * NGTCP2_SECONDS;

ngtcp2_tstamp system_ns() {
  return static_cast<ngtcp2_tstamp>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

// The destination address a datagram came to (IP_PKTINFO), with the socket's port.
void local_address(msghdr& msg, int fd, PacketPath& p) {
  socklen_t len = sizeof p.local;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&p.local), &len);
  p.local_len = len;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
      in_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof info);
      reinterpret_cast<sockaddr_in*>(&p.local)->sin_addr = info.ipi_addr;
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
      in6_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof info);
      reinterpret_cast<sockaddr_in6*>(&p.local)->sin6_addr = info.ipi6_addr;
    }
  }
}

uint32_t ecn_of(msghdr& msg) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) ||
        (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS)) {
      int v = 0;
      std::memcpy(&v, CMSG_DATA(c), c->cmsg_len > CMSG_LEN(1) ? sizeof(int) : 1);
      return static_cast<uint32_t>(v) & 0x3;
    }
  }
  return 0;
}
} // namespace

QuicEndpoint::QuicEndpoint(server::ServerContext& ctx, int fd,
                           std::shared_ptr<const QuicTlsContext> tls, const config::QuicConfig& cfg,
                           std::shared_ptr<const QuicSecret> secret, uint8_t worker,
                           uint16_t listener)
    : ctx_(ctx), fd_(fd), tls_(std::move(tls)), cfg_(cfg), secret_(std::move(secret)),
      worker_(worker), listener_(listener) {
  ev_io_init(&io_, io_cb, fd_, EV_READ);
  io_.data = this;
  ev_io_start(ctx_.loop(), &io_);
  ctx_.add_endpoint(this);
}

QuicEndpoint::~QuicEndpoint() {
  ev_io_stop(ctx_.loop(), &io_);
  close_all();
  ctx_.deferred().run(); // the connections disposed of go now, while this still exists
  ctx_.remove_endpoint(this);
}

void QuicEndpoint::update(std::shared_ptr<const QuicTlsContext> tls, const config::QuicConfig& cfg,
                          uint16_t listener) {
  tls_ = std::move(tls);
  cfg_ = cfg;
  listener_ = listener;
}

void QuicEndpoint::drain() {
  draining_ = true;
  std::vector<QuicConnection*> all;
  for (auto& [key, c] : by_cid_)
    if (std::find(all.begin(), all.end(), c) == all.end())
      all.push_back(c);
  for (QuicConnection* c : all)
    c->drain();
}

void QuicEndpoint::close_all() {
  std::vector<QuicConnection*> all;
  for (auto& [key, c] : by_cid_)
    if (std::find(all.begin(), all.end(), c) == all.end())
      all.push_back(c);
  for (QuicConnection* c : all)
    c->close_now();
}

void QuicEndpoint::add_cid(const ngtcp2_cid& cid, QuicConnection* c) {
  by_cid_.emplace(std::string(cid_key(cid)), c);
}

void QuicEndpoint::remove_cid(const ngtcp2_cid& cid) {
  if (auto it = by_cid_.find(cid_key(cid)); it != by_cid_.end())
    by_cid_.erase(it);
}

void QuicEndpoint::gone(QuicConnection* c) {
  if (!c->handshake_done())
    --handshakes_;
  --connections_;
  ctx_.stats().quic_closed.inc();
  ctx_.deferred().dispose(c);
  if (connections_ == 0)
    ctx_.endpoint_idle();
}

void QuicEndpoint::io_cb(struct ev_loop*, ev_io* w, int) {
  static_cast<QuicEndpoint*>(w->data)->on_readable();
}

void QuicEndpoint::on_readable() {
  // One batch of datagrams per call. The buffers are left uninitialised: a page the kernel
  // never writes to (most of each 64 KiB slot) is never backed by memory.
  struct Slot {
    PacketPath path;
    iovec iov;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(in6_pktinfo)) + CMSG_SPACE(sizeof(int))];
  };
  thread_local std::unique_ptr<uint8_t[]> buf(new uint8_t[kDatagramsPerCall * kMaxDatagram]);
  thread_local Slot slots[kDatagramsPerCall];
  mmsghdr msgs[kDatagramsPerCall];
  for (int done = 0; done < kDatagramsPerWakeup;) {
    for (int i = 0; i < kDatagramsPerCall; ++i) {
      Slot& s = slots[i];
      s.iov = {buf.get() + static_cast<size_t>(i) * kMaxDatagram, kMaxDatagram};
      msghdr& m = msgs[i].msg_hdr;
      m = msghdr{};
      m.msg_name = &s.path.remote;
      m.msg_namelen = sizeof s.path.remote;
      m.msg_iov = &s.iov;
      m.msg_iovlen = 1;
      m.msg_control = s.control;
      m.msg_controllen = sizeof s.control;
    }
    int n = ::recvmmsg(fd_, msgs, kDatagramsPerCall, 0, nullptr);
    if (n <= 0)
      return; // EAGAIN, or an ICMP error queued for the socket: nothing to read now
    for (int i = 0; i < n; ++i) {
      msghdr& m = msgs[i].msg_hdr;
      if (msgs[i].msg_len == 0 || (m.msg_flags & MSG_TRUNC))
        continue;
      PacketPath& path = slots[i].path;
      path.remote_len = m.msg_namelen;
      local_address(m, fd_, path);
      ngtcp2_pkt_info pi{};
      pi.ecn = ecn_of(m);
      on_datagram(path, pi, static_cast<uint8_t*>(slots[i].iov.iov_base), msgs[i].msg_len);
    }
    done += n;
    if (n < kDatagramsPerCall)
      return; // the socket is empty
  }
}

void QuicEndpoint::on_datagram(const PacketPath& path, const ngtcp2_pkt_info& pi, uint8_t* data,
                               size_t len) {
  ngtcp2_version_cid vc;
  switch (ngtcp2_pkt_decode_version_cid(&vc, data, len, kCidLength)) {
  case 0: break;
  case NGTCP2_ERR_VERSION_NEGOTIATION: send_version_negotiation(vc, path); return;
  default: return; // not QUIC: dropped
  }
  if (auto it = by_cid_.find(cid_key(vc.dcid, vc.dcidlen)); it != by_cid_.end()) {
    it->second->on_packet(path, pi, data, len);
    return;
  }
  if (vc.version == 0) {
    // A short header for no connection of ours (one that ended, or another worker's before a
    // restart): a stateless reset tells the client at once instead of after its idle timeout.
    send_stateless_reset(vc, path, len);
    return;
  }
  accept(path, pi, data, len);
}

void QuicEndpoint::accept(const PacketPath& path, const ngtcp2_pkt_info& pi, uint8_t* data,
                          size_t len) {
  ngtcp2_pkt_hd hd;
  if (ngtcp2_accept(&hd, data, len) != 0)
    return; // not a client's Initial (or too short to be one: RFC 9000 14.1)
  if (draining_ || connections_ >= cfg_.max_connections) {
    ctx_.stats().quic_refused.inc();
    send_refusal(hd, path, len * 3); // the client falls back to TCP at once, not at a timeout
    return;
  }
  ngtcp2_cid odcid;
  const ngtcp2_cid* retried = nullptr;
  if (hd.token.len > 0 && hd.token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) {
    if (ngtcp2_crypto_verify_retry_token(
            &odcid, hd.token.base, hd.token.len, secret_->data(), secret_->size(), hd.version,
            reinterpret_cast<const sockaddr*>(&path.remote), path.remote_len, &hd.dcid,
            kRetryTokenLife, system_ns()) != 0)
      return; // forged, expired, or for another address: dropped (RFC 9000 8.1.2)
    retried = &odcid;
  } else if (handshakes_ >= cfg_.retry_above_handshakes) {
    // Many handshakes at once (a flood of Initials from forged addresses, perhaps): the client
    // proves its address with one round trip before any handshake work is done for it.
    send_retry(hd, path, len * 3);
    return;
  }
  QuicConnection* c = QuicConnection::create(*this, hd, retried, path);
  if (!c)
    return;
  ++connections_;
  ++handshakes_;
  ctx_.stats().quic_opened.inc();
  c->on_packet(path, pi, data, len);
}

void QuicEndpoint::send(const PacketPath& path, const uint8_t* data, size_t len) {
  send_batch(path, data, len, len, 0);
}

void QuicEndpoint::send_batch(const PacketPath& path, const uint8_t* data, size_t len,
                              size_t segment, uint32_t ecn) {
  if (len <= segment || gso_) {
    if (send_datagrams(path, data, len, len > segment ? segment : 0, ecn) ||
        (errno != EIO && errno != EINVAL))
      return;     // sent, or dropped as the network may drop it: QUIC's loss recovery resends
    gso_ = false; // no segmentation offload on this path's device: one datagram at a time
  }
  // Without GSO: every packet its own message, all of them in one sendmmsg().
  mmsghdr msgs[kMaxSegments];
  iovec iovs[kMaxSegments];
  alignas(cmsghdr) char control[kMaxSegments][kControlSpace];
  unsigned count = 0;
  for (size_t off = 0; off < len && count < kMaxSegments; off += segment, ++count) {
    iovs[count] = {const_cast<uint8_t*>(data + off), std::min(segment, len - off)};
    msghdr& m = msgs[count].msg_hdr;
    m = msghdr{};
    m.msg_name = const_cast<sockaddr_storage*>(&path.remote);
    m.msg_namelen = path.remote_len;
    m.msg_iov = &iovs[count];
    m.msg_iovlen = 1;
    m.msg_control = control[count];
    m.msg_controllen = write_control(path, ecn, 0, control[count]);
    if (m.msg_controllen == 0)
      m.msg_control = nullptr;
  }
  for (unsigned sent = 0; sent < count;) {
    int n = ::sendmmsg(fd_, msgs + sent, count - sent, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return; // a full socket buffer: the rest is lost, and recovered
    sent += static_cast<unsigned>(n);
  }
}

bool QuicEndpoint::send_datagrams(const PacketPath& path, const uint8_t* data, size_t len,
                                  size_t segment, uint32_t ecn) {
  iovec iov{const_cast<uint8_t*>(data), len};
  msghdr msg{};
  msg.msg_name = const_cast<sockaddr_storage*>(&path.remote);
  msg.msg_namelen = path.remote_len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[kControlSpace];
  msg.msg_control = control;
  msg.msg_controllen = write_control(path, ecn, segment, control);
  if (msg.msg_controllen == 0)
    msg.msg_control = nullptr;
  for (;;) {
    if (::sendmsg(fd_, &msg, 0) >= 0)
      return true;
    if (errno != EINTR)
      return false;
  }
}

size_t QuicEndpoint::write_control(const PacketPath& path, uint32_t ecn, size_t segment,
                                   char* buf) {
  std::memset(buf, 0, kControlSpace);
  size_t used = 0;
  auto add = [&](int level, int type, const void* value, size_t size) {
    auto* c = reinterpret_cast<cmsghdr*>(buf + used);
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(size);
    std::memcpy(CMSG_DATA(c), value, size);
    used += CMSG_SPACE(size);
  };
  int tos = static_cast<int>(ecn);
  // From the address the client sent to (a wildcard socket has many), with the ECN codepoint
  // ngtcp2 chose for the packets.
  if (path.local.ss_family == AF_INET) {
    in_pktinfo info{};
    info.ipi_spec_dst = reinterpret_cast<const sockaddr_in*>(&path.local)->sin_addr;
    add(IPPROTO_IP, IP_PKTINFO, &info, sizeof info);
    if (tos != 0)
      add(IPPROTO_IP, IP_TOS, &tos, sizeof tos);
  } else if (path.local.ss_family == AF_INET6) {
    in6_pktinfo info{};
    info.ipi6_addr = reinterpret_cast<const sockaddr_in6*>(&path.local)->sin6_addr;
    add(IPPROTO_IPV6, IPV6_PKTINFO, &info, sizeof info);
    if (tos != 0)
      add(IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof tos);
  }
  if (segment > 0) {
    uint16_t seg = static_cast<uint16_t>(segment);
    add(SOL_UDP, UDP_SEGMENT, &seg, sizeof seg);
  }
  return used;
}

void QuicEndpoint::send_retry(const ngtcp2_pkt_hd& hd, const PacketPath& path, size_t max_len) {
  ngtcp2_cid scid = new_cid(worker_);
  uint8_t token[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN];
  ngtcp2_ssize tokenlen =
      ngtcp2_crypto_generate_retry_token(token, secret_->data(), secret_->size(), hd.version,
                                         reinterpret_cast<const sockaddr*>(&path.remote),
                                         path.remote_len, &scid, &hd.dcid, system_ns());
  if (tokenlen < 0)
    return;
  uint8_t out[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  // Never more than three times what the client sent (RFC 9000 8.1: amplification).
  size_t cap = std::min(sizeof out, max_len);
  ngtcp2_ssize n = ngtcp2_crypto_write_retry(out, cap, hd.version, &hd.scid, &scid, &hd.dcid, token,
                                             static_cast<size_t>(tokenlen));
  if (n > 0) {
    ctx_.stats().quic_retries.inc();
    send(path, out, static_cast<size_t>(n));
  }
}

void QuicEndpoint::send_refusal(const ngtcp2_pkt_hd& hd, const PacketPath& path, size_t max_len) {
  uint8_t out[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  size_t cap = std::min(sizeof out, max_len);
  ngtcp2_ssize n = ngtcp2_crypto_write_connection_close(out, cap, hd.version, &hd.scid, &hd.dcid,
                                                        NGTCP2_CONNECTION_REFUSED, nullptr, 0);
  if (n > 0)
    send(path, out, static_cast<size_t>(n));
}

void QuicEndpoint::send_version_negotiation(const ngtcp2_version_cid& vc, const PacketPath& path) {
  uint8_t out[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  uint32_t versions[] = {NGTCP2_PROTO_VER_V1};
  uint8_t unused;
  random_bytes(&unused, 1);
  ngtcp2_ssize n =
      ngtcp2_pkt_write_version_negotiation(out, sizeof out, unused, vc.scid, vc.scidlen, vc.dcid,
                                           vc.dcidlen, versions, std::size(versions));
  if (n > 0)
    send(path, out, static_cast<size_t>(n));
}

void QuicEndpoint::send_stateless_reset(const ngtcp2_version_cid& vc, const PacketPath& path,
                                        size_t len) {
  // RFC 9000 10.3: smaller than what provoked it (no loop of resets between two endpoints),
  // and at least 21 bytes (a short header with 5 random bytes and the 16-byte token).
  constexpr size_t kMin = NGTCP2_STATELESS_RESET_TOKENLEN + 5 + 1;
  if (len <= kMin || vc.dcidlen != kCidLength)
    return;
  ngtcp2_cid cid;
  ngtcp2_cid_init(&cid, vc.dcid, vc.dcidlen);
  uint8_t token[NGTCP2_STATELESS_RESET_TOKENLEN];
  if (ngtcp2_crypto_generate_stateless_reset_token(token, secret_->data(), secret_->size(), &cid) !=
      0)
    return;
  size_t randlen = std::min<size_t>(len - 1, 64) - NGTCP2_STATELESS_RESET_TOKENLEN;
  uint8_t rand[64];
  random_bytes(rand, randlen);
  uint8_t out[128];
  ngtcp2_ssize n = ngtcp2_pkt_write_stateless_reset(out, sizeof out, token, rand, randlen);
  if (n > 0)
    send(path, out, static_cast<size_t>(n));
}

} // namespace portico::quic
