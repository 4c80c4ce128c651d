#include "core/cidr.h"

#include <arpa/inet.h>
#include <charconv>
#include <cstring>

namespace portico::core {

namespace {

// The address in network order, and whether it is IPv6 (IPv4-mapped ones become IPv4).
bool parse_address(std::string_view text, std::array<uint8_t, 16>& out, bool& v6) {
  // inet_pton wants a C string: copied to the stack, as this runs per request when
  // trusted_proxies is set (an IPv6 address is longer than std::string's inline buffer).
  char s[INET6_ADDRSTRLEN];
  if (text.empty() || text.size() >= sizeof s)
    return false;
  std::memcpy(s, text.data(), text.size());
  s[text.size()] = '\0';
  out.fill(0);
  if (inet_pton(AF_INET, s, out.data()) == 1) {
    v6 = false;
    return true;
  }
  if (inet_pton(AF_INET6, s, out.data()) != 1)
    return false;
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(out.data(), kMapped, sizeof kMapped) == 0) {
    std::memmove(out.data(), out.data() + 12, 4);
    std::memset(out.data() + 4, 0, 12);
    v6 = false;
    return true;
  }
  v6 = true;
  return true;
}

bool contains(const Cidr& c, const std::array<uint8_t, 16>& a, bool v6) {
  if (c.v6 != v6)
    return false;
  int full = c.prefix / 8, rest = c.prefix % 8;
  if (std::memcmp(c.address.data(), a.data(), static_cast<size_t>(full)) != 0)
    return false;
  if (rest == 0)
    return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (c.address[full] & mask) == (a[full] & mask);
}

} // namespace

std::string to_string(const Cidr& c) {
  char buf[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(c.v6 ? AF_INET6 : AF_INET, c.address.data(), buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(c.prefix);
}

std::optional<Cidr> parse_cidr(std::string_view text) {
  Cidr c;
  auto slash = text.find('/');
  if (!parse_address(text.substr(0, slash), c.address, c.v6))
    return std::nullopt;
  int max = c.v6 ? 128 : 32;
  c.prefix = max;
  if (slash != std::string_view::npos) {
    std::string_view bits = text.substr(slash + 1);
    auto r = std::from_chars(bits.data(), bits.data() + bits.size(), c.prefix);
    if (bits.empty() || r.ec != std::errc() || r.ptr != bits.data() + bits.size() || c.prefix < 0 ||
        c.prefix > max)
      return std::nullopt;
  }
  return c;
}

bool in_any(std::span<const Cidr> ranges, std::string_view ip) {
  if (ranges.empty())
    return false;
  std::array<uint8_t, 16> a;
  bool v6;
  if (!parse_address(ip, a, v6))
    return false;
  for (const Cidr& c : ranges)
    if (contains(c, a, v6))
      return true;
  return false;
}

} // namespace portico::core
