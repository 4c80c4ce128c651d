#pragma once
// An address range ("10.0.0.0/8", "2001:db8::/32", or one address) and whether an address
// given as text falls in it: [server] trusted_proxies.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace portico::core {

struct Cidr {
  bool v6 = false;
  std::array<uint8_t, 16> address{}; // network order; the first 4 bytes for IPv4
  int prefix = 0;                    // bits that must match
};

// "ADDRESS" or "ADDRESS/BITS"; nullopt when it is neither (or the bits are out of range).
std::optional<Cidr> parse_cidr(std::string_view text);
// "ADDRESS/BITS", as parse_cidr reads it back.
std::string to_string(const Cidr& c);
// ip: a numeric address as peers are logged ("127.0.0.1", "::1"); an IPv4-mapped IPv6
// address matches IPv4 ranges. Anything else (a unix socket peer) matches nothing.
bool in_any(std::span<const Cidr> ranges, std::string_view ip);

} // namespace portico::core
