#pragma once
// A worker's UDP socket of a QUIC listener and the connections it holds: datagrams are read
// in batches and handed to their connection by destination connection ID; a client's first
// Initial makes a connection (after a Retry, when many handshakes are under way), an unknown
// version gets Version Negotiation, a short-header packet for no connection a stateless reset.
#include "config/config.h"
#include "quic/connection_ids.h"
#include "quic/quic_connection.h"
#include "server/server_context.h"

#include <cstdint>
#include <ev.h>
#include <memory>
#include <netinet/in.h>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <unordered_map>

namespace portico::quic {

class QuicTlsContext;

class QuicEndpoint final : public server::DatagramEndpoint {
public:
  QuicEndpoint(server::ServerContext& ctx, int fd, std::shared_ptr<const QuicTlsContext> tls,
               const config::QuicConfig& cfg, std::shared_ptr<const QuicSecret> secret,
               uint8_t worker, uint16_t listener);
  ~QuicEndpoint() override;
  QuicEndpoint(const QuicEndpoint&) = delete;
  QuicEndpoint& operator=(const QuicEndpoint&) = delete;

  int fd() const { return fd_; }
  // A reload: connections made from now on take these; those open keep theirs.
  void update(std::shared_ptr<const QuicTlsContext> tls, const config::QuicConfig& cfg,
              uint16_t listener);
  // server::DatagramEndpoint: GOAWAY on every connection, no new ones.
  void drain() override;
  size_t open_connections() const override { return connections_; }
  // Every connection closes now (the worker stops, or the listener went away).
  void close_all();

  // For connections.
  server::ServerContext& context() { return ctx_; }
  const std::shared_ptr<const QuicTlsContext>& tls() const { return tls_; }
  const config::QuicConfig& config() const { return cfg_; }
  const QuicSecret& secret() const { return *secret_; }
  uint8_t worker() const { return worker_; }
  uint16_t listener() const { return listener_; }
  bool draining() const { return draining_; }
  void send(const PacketPath& path, const uint8_t* data, size_t len);
  // Packets of one connection, each `segment` bytes but the last, in one call: one datagram
  // each on the wire (UDP GSO where the device has it, else one sendmmsg()).
  void send_batch(const PacketPath& path, const uint8_t* data, size_t len, size_t segment,
                  uint32_t ecn);
  // Where a connection writes such a batch: kBatchBytes, reused by every connection of the
  // endpoint (a write fills and sends it before the next one starts).
  uint8_t* batch_buffer() { return batch_.get(); }
  static constexpr size_t kBatchBytes = 65000;
  static constexpr size_t kMaxSegments = 64;
  void add_cid(const ngtcp2_cid& cid, QuicConnection* c);
  void remove_cid(const ngtcp2_cid& cid);
  void handshake_finished() { --handshakes_; }
  // c is over: disposed of after this loop pass.
  void gone(QuicConnection* c);

private:
  static void io_cb(struct ev_loop*, ev_io* w, int);
  void on_readable();
  void on_datagram(const PacketPath& path, const ngtcp2_pkt_info& pi, uint8_t* data, size_t len);
  void accept(const PacketPath& path, const ngtcp2_pkt_info& pi, uint8_t* data, size_t len);
  void send_retry(const ngtcp2_pkt_hd& hd, const PacketPath& path, size_t max_len);
  // An Initial CONNECTION_CLOSE with CONNECTION_REFUSED, no connection state kept.
  void send_refusal(const ngtcp2_pkt_hd& hd, const PacketPath& path, size_t max_len);
  void send_version_negotiation(const ngtcp2_version_cid& vc, const PacketPath& path);
  void send_stateless_reset(const ngtcp2_version_cid& vc, const PacketPath& path, size_t len);
  bool send_datagrams(const PacketPath& path, const uint8_t* data, size_t len, size_t segment,
                      uint32_t ecn);
  // The source address, ECN and segment size of a send, as control messages in buf
  // (kControlSpace bytes); returns their length.
  static size_t write_control(const PacketPath& path, uint32_t ecn, size_t segment, char* buf);
  static constexpr size_t kControlSpace =
      CMSG_SPACE(sizeof(in6_pktinfo)) + CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint16_t));

  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  server::ServerContext& ctx_;
  int fd_;
  std::shared_ptr<const QuicTlsContext> tls_;
  config::QuicConfig cfg_;
  std::shared_ptr<const QuicSecret> secret_;
  uint8_t worker_;
  uint16_t listener_;
  ev_io io_;
  std::unordered_map<std::string, QuicConnection*, KeyHash, std::equal_to<>> by_cid_;
  size_t connections_ = 0;
  size_t handshakes_ = 0;
  bool draining_ = false;
  bool gso_ = true;
  std::unique_ptr<uint8_t[]> batch_{new uint8_t[kBatchBytes]};
};

} // namespace portico::quic
