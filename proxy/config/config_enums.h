#pragma once
// The configuration's closed choices, as the validated config holds them: each enum with its
// names in the TOML file, declared once here for the loader, the dump and to_string.
#include <cstdint>
#include <optional>
#include <string_view>

namespace portico::config {

enum class UpstreamProtocol : uint8_t {
  HTTP1, // pooled HTTP/1.1 keep-alive connections
  H2C,   // HTTP/2 streams over a few connections (h2 with tls)
};

enum class LoadBalancing : uint8_t {
  LEAST_REQUEST, // fewest outstanding per unit of weight, round robin among equals
  ROUND_ROBIN,   // smooth weighted, nginx's
  RANDOM_TWO,    // the less loaded of two picked at random by weight: Envoy's default
  RING_HASH,     // a consistent hash of the request's hash_on key on a ring (Envoy's, nginx's)
  MAGLEV,        // the same on a Maglev table
};

enum class ProxyProtocolVersion : uint8_t {
  NONE, // no header
  V1,   // HAProxy's text header
  V2,   // HAProxy's binary header
};

enum class AccessLogFormat : uint8_t {
  TEXT,     // nginx's combined format's first fields and the phase times (kTextLogFormat)
  COMBINED, // nginx's combined (kCombinedLogFormat)
  JSON,     // one object per line
  CUSTOM,   // a template of $fields (config/log_format.h)
};

template <typename E> struct EnumName {
  std::string_view name;
  E value;
};

inline constexpr EnumName<UpstreamProtocol> kUpstreamProtocols[] = {
    {"http1", UpstreamProtocol::HTTP1}, {"h2c", UpstreamProtocol::H2C}};
inline constexpr EnumName<LoadBalancing> kLoadBalancings[] = {
    {"least_request", LoadBalancing::LEAST_REQUEST},
    {"round_robin", LoadBalancing::ROUND_ROBIN},
    {"random_two", LoadBalancing::RANDOM_TWO},
    {"ring_hash", LoadBalancing::RING_HASH},
    {"maglev", LoadBalancing::MAGLEV}};
inline constexpr EnumName<ProxyProtocolVersion> kProxyProtocolVersions[] = {
    {"", ProxyProtocolVersion::NONE},
    {"v1", ProxyProtocolVersion::V1},
    {"v2", ProxyProtocolVersion::V2}};
inline constexpr EnumName<AccessLogFormat> kAccessLogFormats[] = {
    {"text", AccessLogFormat::TEXT},
    {"combined", AccessLogFormat::COMBINED},
    {"json", AccessLogFormat::JSON}};

template <typename E, size_t N>
constexpr std::optional<E> enum_named(const EnumName<E> (&names)[N], std::string_view s) {
  for (const auto& n : names)
    if (n.name == s)
      return n.value;
  return std::nullopt;
}

template <typename E, size_t N>
constexpr std::string_view name_of(const EnumName<E> (&names)[N], E value) {
  for (const auto& n : names)
    if (n.value == value)
      return n.name;
  return "?";
}

inline std::string_view to_string(UpstreamProtocol v) {
  return name_of(kUpstreamProtocols, v);
}
inline std::string_view to_string(LoadBalancing v) {
  return name_of(kLoadBalancings, v);
}
inline std::string_view to_string(ProxyProtocolVersion v) {
  return name_of(kProxyProtocolVersions, v);
}
inline std::string_view to_string(AccessLogFormat v) {
  return name_of(kAccessLogFormats, v);
}

} // namespace portico::config
