#pragma once
// Connection IDs this proxy issues, and the process's secret behind its stateless reset and
// Retry tokens. An ID's first byte is the worker's index (udp_socket.h's steering program
// reads it), the rest random.
#include <ngtcp2/ngtcp2.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace portico::quic {

inline constexpr size_t kCidLength = 17;

// Random bytes from GnuTLS's generator (nonce quality; key quality for secrets).
void random_bytes(uint8_t* out, size_t n);
void secret_bytes(uint8_t* out, size_t n);

// Generated once per process at start and read by every worker after (no lock): a client's
// Retry token comes back to the worker its address hashes to, a stateless reset may be asked
// of any.
class QuicSecret {
public:
  QuicSecret();
  const uint8_t* data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

private:
  std::array<uint8_t, 32> bytes_{};
};

ngtcp2_cid new_cid(uint8_t worker);

// The map key of an ID.
inline std::string_view cid_key(const uint8_t* data, size_t len) {
  return {reinterpret_cast<const char*>(data), len};
}
inline std::string_view cid_key(const ngtcp2_cid& c) {
  return cid_key(c.data, c.datalen);
}

} // namespace portico::quic
