#include "core/proxy_protocol.h"

#include "core/expected.h"

#include <arpa/inet.h>
#include <sys/un.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace portico::core::proxy_protocol {

namespace {

constexpr std::string_view kV1Prefix = "PROXY ";
constexpr std::string_view kUnknown = "UNKNOWN";
constexpr std::string_view kV2Signature{"\r\n\r\n\0\r\nQUIT\n", 12};
constexpr size_t kV2FixedBytes = 16; // signature, version and command, family, length

// v2 family and transport bytes Portico accepts with PROXY, and their address blocks (spec 2.2).
constexpr uint8_t kUnspec = 0x00, kTcp4 = 0x11, kTcp6 = 0x21, kUnixStream = 0x31;
constexpr size_t kTcp4Block = 12, kTcp6Block = 36, kUnixBlock = 216, kUnixPath = 108;
constexpr uint8_t kTypeCrc32c = 0x03, kTypeSsl = 0x20;
constexpr size_t kSslFixed = 5; // the SSL TLV's client byte and verify word, before its sub-TLVs

static_assert(sizeof(sockaddr_un::sun_path) == kUnixPath, "v2 carries 108-byte unix paths");

__attribute__((format(printf, 1, 2))) std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  int n = std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return std::string(buf, n < 0 ? 0 : std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
}

// Peer bytes quoted in the error log: control bytes escaped, so that a header cannot forge log
// lines, and the length capped.
std::string printable(std::string_view s) {
  constexpr size_t kMax = 48;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
      out += static_cast<char>(c);
    else
      out += fmt("\\x%02x", c);
  }
  if (s.size() > kMax)
    out += "...";
  return out;
}

Parsed invalid(std::string why) {
  Parsed p;
  p.status = Status::INVALID;
  p.error = "PROXY protocol " + std::move(why);
  return p;
}

Parsed done(size_t consumed, const Header& h) {
  Parsed p;
  p.status = Status::DONE;
  p.consumed = consumed;
  p.header = h;
  return p;
}

// Whether `have`, the bytes so far, can still grow into `want`.
bool may_become(std::string_view have, std::string_view want) {
  return want.starts_with(have);
}

uint8_t byte_at(std::string_view b, size_t i) {
  return static_cast<uint8_t>(b[i]);
}

uint16_t be16(std::string_view b, size_t i) {
  return static_cast<uint16_t>(byte_at(b, i) << 8 | byte_at(b, i + 1));
}

// ---- v1 ----

constexpr const char* kV1FieldNames[4] = {"source address", "destination address", "source port",
                                          "destination port"};

// An address field; a field that has not ended yet (!whole) is only checked for what it may hold.
std::string v1_address(std::string_view t, int af, bool whole, void* out) {
  bool v6 = af == AF_INET6;
  size_t max = v6 ? INET6_ADDRSTRLEN - 1 : INET_ADDRSTRLEN - 1;
  auto allowed = [v6](char c) {
    return (c >= '0' && c <= '9') || c == '.' ||
           (v6 && (c == ':' || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
  };
  bool ok = t.size() <= max && std::all_of(t.begin(), t.end(), allowed);
  if (ok && whole) {
    char s[INET6_ADDRSTRLEN];
    std::memcpy(s, t.data(), t.size());
    s[t.size()] = '\0';
    ok = ::inet_pton(af, s, out) == 1;
  }
  if (!ok)
    return fmt("\"%s\" is not an %s address", printable(t).c_str(), v6 ? "IPv6" : "IPv4");
  return {};
}

// A port field: 0-65535 in decimal, and one spelling each ("0", never "080").
std::string v1_port(std::string_view t, uint16_t& out) {
  if (!std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return fmt("\"%s\" is not a decimal port", printable(t).c_str());
  if (t.size() > 1 && t[0] == '0')
    return fmt("port \"%s\" has a leading zero", printable(t).c_str());
  unsigned v = 0;
  if (t.size() <= 5)
    std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.size() > 5 || v > 65535)
    return fmt("port \"%s\" is over 65535", printable(t).c_str());
  out = static_cast<uint16_t>(v);
  return {};
}

// The line after "PROXY ", without its CRLF. complete: the CRLF has arrived; otherwise this is
// the line so far, and the answer is only whether it can still become valid.
core::expected<Header, std::string> v1_fields(std::string_view body, bool complete) {
  using E = core::unexpected<std::string>;
  Header h;
  h.version = 1;
  // UNKNOWN's fields, whatever they are, are to be ignored (spec 2.1).
  if (body.starts_with(kUnknown)) {
    if (body.size() > kUnknown.size() && body[kUnknown.size()] != ' ')
      return E(fmt("protocol \"%s\" is none of TCP4, TCP6, UNKNOWN",
                   printable(body.substr(0, body.find(' '))).c_str()));
    h.local = true;
    return h;
  }
  size_t sp = body.find(' ');
  std::string_view word = body.substr(0, sp);
  int af = word == "TCP4" ? AF_INET : word == "TCP6" ? AF_INET6 : AF_UNSPEC;
  if (af == AF_UNSPEC) {
    if (!complete && sp == std::string_view::npos &&
        (may_become(word, "TCP4") || may_become(word, kUnknown)))
      return h;
    return E(fmt("protocol \"%s\" is none of TCP4, TCP6, UNKNOWN", printable(word).c_str()));
  }
  if (sp == std::string_view::npos) {
    if (complete)
      return E(fmt("%s without addresses", af == AF_INET ? "TCP4" : "TCP6"));
    return h;
  }

  sockaddr_storage* sides[2] = {&h.source, &h.destination};
  uint16_t ports[2] = {0, 0};
  void* addrs[2];
  for (int i = 0; i < 2; ++i) {
    sides[i]->ss_family = static_cast<sa_family_t>(af);
    addrs[i] = af == AF_INET
                   ? static_cast<void*>(&reinterpret_cast<sockaddr_in*>(sides[i])->sin_addr)
                   : static_cast<void*>(&reinterpret_cast<sockaddr_in6*>(sides[i])->sin6_addr);
  }
  std::string_view rest = body.substr(sp + 1);
  int n = 0;
  for (;;) {
    size_t end = rest.find(' ');
    bool last = end == std::string_view::npos;
    std::string_view t = rest.substr(0, end);
    bool whole = !last || complete;
    // Exactly one space between fields and none after the last: one spelling per header.
    if (n == 4)
      return E("a space or a fifth field after the destination port");
    if (t.empty() && whole)
      return E(fmt("empty %s (fields are separated by exactly one space)", kV1FieldNames[n]));
    std::string err;
    if (n < 2)
      err = v1_address(t, af, whole, addrs[n]);
    else if (!t.empty())
      err = v1_port(t, ports[n - 2]);
    if (!err.empty())
      return E(fmt("%s: %s", kV1FieldNames[n], err.c_str()));
    ++n;
    if (last)
      break;
    rest = rest.substr(end + 1);
  }
  if (complete && n < 4)
    return E(fmt("%d of the 4 fields (addresses, then ports) before CRLF", n));
  for (int i = 0; i < 2; ++i) {
    uint16_t port = htons(ports[i]);
    if (af == AF_INET)
      reinterpret_cast<sockaddr_in*>(sides[i])->sin_port = port;
    else
      reinterpret_cast<sockaddr_in6*>(sides[i])->sin6_port = port;
  }
  return h;
}

Parsed parse_v1(std::string_view bytes) {
  std::string_view line = bytes.substr(0, kMaxV1Bytes);
  if (!may_become(line.substr(0, kV1Prefix.size()), kV1Prefix))
    return invalid(fmt("v1: \"%s\" does not start with \"PROXY \"",
                       printable(line.substr(0, kV1Prefix.size())).c_str()));
  if (line.size() < kV1Prefix.size())
    return {};
  size_t eol = line.find_first_of("\r\n", kV1Prefix.size());
  bool complete = false;
  if (eol != std::string_view::npos) {
    if (line[eol] == '\n')
      return invalid(fmt("v1: LF without CR at byte %zu", eol));
    if (eol + 1 < line.size()) {
      if (line[eol + 1] != '\n')
        return invalid(fmt("v1: CR not followed by LF at byte %zu", eol));
      complete = true;
    }
  }
  size_t body_end = eol == std::string_view::npos ? line.size() : eol;
  auto h = v1_fields(line.substr(kV1Prefix.size(), body_end - kV1Prefix.size()), complete);
  if (!h)
    return invalid("v1: " + h.error());
  if (complete)
    return done(eol + 2, *h);
  if (line.size() == kMaxV1Bytes)
    return invalid(fmt("v1: no CRLF within the first %zu bytes", kMaxV1Bytes));
  return {};
}

// ---- v2 ----

constexpr std::array<uint32_t, 256> kCrc32cTable = [] {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1; // Castagnoli, reflected
    t[i] = c;
  }
  return t;
}();

uint32_t crc32c_update(uint32_t crc, std::string_view s) {
  for (char c : s)
    crc = (crc >> 8) ^ kCrc32cTable[(crc ^ static_cast<uint8_t>(c)) & 0xff];
  return crc;
}

// The TLVs in [from, to) of the header must tile it exactly. crc_at: where a CRC32C TLV's value
// is, 0 if none.
std::string check_tlvs(std::string_view header, size_t from, size_t to, bool in_ssl,
                       size_t& crc_at) {
  const char* where = in_ssl ? "SSL TLV" : "header";
  for (size_t p = from; p < to;) {
    if (to - p < 3)
      return fmt("TLV at byte %zu cut short: %zu of its 3 type and length bytes left in the %s", p,
                 to - p, where);
    uint8_t type = byte_at(header, p);
    size_t len = be16(header, p + 1);
    size_t value = p + 3;
    if (len > to - value)
      return fmt("TLV type 0x%02x at byte %zu: length %zu runs past the %s (%zu bytes left)", type,
                 p, len, where, to - value);
    if (!in_ssl && type == kTypeCrc32c) {
      if (len != 4)
        return fmt("CRC32C TLV of %zu bytes, not 4", len);
      if (crc_at != 0)
        return "two CRC32C TLVs";
      crc_at = value;
    }
    if (!in_ssl && type == kTypeSsl) {
      if (len < kSslFixed)
        return fmt("SSL TLV of %zu bytes, shorter than its client and verify fields", len);
      auto err = check_tlvs(header, value + kSslFixed, value + len, true, crc_at);
      if (!err.empty())
        return err;
    }
    p = value + len;
  }
  return {};
}

// The checksum is over the whole header with its own value zeroed (spec 2.2.5).
bool crc_matches(std::string_view header, size_t crc_at) {
  uint32_t want = static_cast<uint32_t>(be16(header, crc_at)) << 16 | be16(header, crc_at + 2);
  uint32_t crc = crc32c_update(0xffffffffu, header.substr(0, crc_at));
  crc = crc32c_update(crc, std::string_view("\0\0\0\0", 4));
  crc = crc32c_update(crc, header.substr(crc_at + 4));
  return ~crc == want;
}

void read_v2_addresses(std::string_view b, uint8_t family, Header& h) {
  const char* block = b.data() + kV2FixedBytes;
  if (family == kTcp4) {
    auto* s = reinterpret_cast<sockaddr_in*>(&h.source);
    auto* d = reinterpret_cast<sockaddr_in*>(&h.destination);
    s->sin_family = d->sin_family = AF_INET;
    std::memcpy(&s->sin_addr, block, 4);
    std::memcpy(&d->sin_addr, block + 4, 4);
    std::memcpy(&s->sin_port, block + 8, 2); // already in network order
    std::memcpy(&d->sin_port, block + 10, 2);
  } else if (family == kTcp6) {
    auto* s = reinterpret_cast<sockaddr_in6*>(&h.source);
    auto* d = reinterpret_cast<sockaddr_in6*>(&h.destination);
    s->sin6_family = d->sin6_family = AF_INET6;
    std::memcpy(&s->sin6_addr, block, 16);
    std::memcpy(&d->sin6_addr, block + 16, 16);
    std::memcpy(&s->sin6_port, block + 32, 2);
    std::memcpy(&d->sin6_port, block + 34, 2);
  } else {
    auto* s = reinterpret_cast<sockaddr_un*>(&h.source);
    auto* d = reinterpret_cast<sockaddr_un*>(&h.destination);
    s->sun_family = d->sun_family = AF_UNIX;
    std::memcpy(s->sun_path, block, kUnixPath);
    std::memcpy(d->sun_path, block + kUnixPath, kUnixPath);
  }
}

Parsed parse_v2(std::string_view b) {
  if (!may_become(b.substr(0, kV2Signature.size()), kV2Signature))
    return invalid(fmt("v2: \"%s\" is not the 12-byte signature",
                       printable(b.substr(0, kV2Signature.size())).c_str()));
  if (b.size() <= 12)
    return {};
  uint8_t version = byte_at(b, 12) >> 4, command = byte_at(b, 12) & 0x0f;
  if (version != 2)
    return invalid(fmt("v2: version %u, not 2", version));
  if (command > 1)
    return invalid(fmt("v2: command %u is neither LOCAL (0) nor PROXY (1)", command));
  bool proxy = command == 1;
  if (b.size() <= 13)
    return {};
  // LOCAL's family is to be ignored with its address block (spec 2.2); PROXY's must be TCP.
  uint8_t family = byte_at(b, 13);
  size_t block = 0;
  if (proxy) {
    switch (family) {
    case kUnspec: break;
    case kTcp4: block = kTcp4Block; break;
    case kTcp6: block = kTcp6Block; break;
    case kUnixStream: block = kUnixBlock; break;
    default:
      return invalid(fmt("v2: family and transport 0x%02x is none of TCP over IPv4 (0x11), IPv6 "
                         "(0x21), unix stream (0x31), UNSPEC (0x00)",
                         family));
    }
  }
  if (b.size() < kV2FixedBytes)
    return {};
  size_t len = be16(b, 14);
  size_t total = kV2FixedBytes + len;
  if (total > kMaxHeaderBytes)
    return invalid(fmt("v2: length %zu makes a %zu-byte header, over the %zu-byte cap", len, total,
                       kMaxHeaderBytes));
  if (len < block)
    return invalid(fmt("v2: length %zu is shorter than the %zu-byte address block of family 0x%02x",
                       len, block, family));
  if (b.size() < total)
    return {};

  Header h;
  h.version = 2;
  if (!proxy || family == kUnspec)
    h.local = true;
  if (!proxy)
    return done(total, h);
  std::string_view header = b.substr(0, total);
  size_t crc_at = 0;
  auto err = check_tlvs(header, kV2FixedBytes + block, total, false, crc_at);
  if (!err.empty())
    return invalid("v2: " + err);
  if (crc_at != 0 && !crc_matches(header, crc_at))
    return invalid("v2: CRC32C TLV does not match the header");
  if (!h.local)
    read_v2_addresses(header, family, h);
  return done(total, h);
}

// ---- encoding ----

bool is_ip(const sockaddr_storage& a) {
  return a.ss_family == AF_INET || a.ss_family == AF_INET6;
}

// An address and its port (network order) as 4 bytes, or as 16 when v6 (IPv4 then mapped).
struct Ip {
  std::array<uint8_t, 16> addr{};
  uint16_t port = 0;
};

Ip to_ip(const sockaddr_storage& a, bool v6) {
  Ip ip;
  if (a.ss_family == AF_INET) {
    const auto& s = reinterpret_cast<const sockaddr_in&>(a);
    ip.port = s.sin_port;
    if (v6) {
      ip.addr[10] = ip.addr[11] = 0xff;
      std::memcpy(ip.addr.data() + 12, &s.sin_addr, 4);
    } else {
      std::memcpy(ip.addr.data(), &s.sin_addr, 4);
    }
  } else {
    const auto& s = reinterpret_cast<const sockaddr_in6&>(a);
    ip.port = s.sin6_port;
    std::memcpy(ip.addr.data(), &s.sin6_addr, 16);
  }
  return ip;
}

} // namespace

std::string_view to_string(Status s) {
  switch (s) {
  case Status::NEED_MORE: return "NEED_MORE";
  case Status::DONE: return "DONE";
  case Status::INVALID: return "INVALID";
  }
  return "?";
}

Parsed parse(std::string_view bytes) {
  if (bytes.empty())
    return {};
  if (bytes[0] == kV1Prefix[0])
    return parse_v1(bytes);
  if (bytes[0] == kV2Signature[0])
    return parse_v2(bytes);
  return invalid(fmt("header missing: the first byte 0x%02x (\"%s\") starts neither \"PROXY \" nor "
                     "the v2 signature",
                     byte_at(bytes, 0), printable(bytes.substr(0, 1)).c_str()));
}

std::string encode_v1(const sockaddr_storage& src, const sockaddr_storage& dst) {
  if (!is_ip(src) || !is_ip(dst))
    return "PROXY UNKNOWN\r\n";
  bool v6 = src.ss_family == AF_INET6 || dst.ss_family == AF_INET6;
  Ip s = to_ip(src, v6), d = to_ip(dst, v6);
  char st[INET6_ADDRSTRLEN], dt[INET6_ADDRSTRLEN];
  int af = v6 ? AF_INET6 : AF_INET;
  ::inet_ntop(af, s.addr.data(), st, sizeof st);
  ::inet_ntop(af, d.addr.data(), dt, sizeof dt);
  return fmt("PROXY %s %s %s %u %u\r\n", v6 ? "TCP6" : "TCP4", st, dt, ntohs(s.port),
             ntohs(d.port));
}

std::string encode_v2(const sockaddr_storage& src, const sockaddr_storage& dst) {
  std::string out(kV2Signature);
  if (!is_ip(src) || !is_ip(dst)) {
    out += std::string_view("\x20\x00\x00\x00", 4); // LOCAL, UNSPEC, no address block
    return out;
  }
  bool v6 = src.ss_family == AF_INET6 || dst.ss_family == AF_INET6;
  Ip s = to_ip(src, v6), d = to_ip(dst, v6);
  size_t n = v6 ? 16 : 4;
  out += '\x21';
  out += static_cast<char>(v6 ? kTcp6 : kTcp4);
  out += '\0';
  out += static_cast<char>(v6 ? kTcp6Block : kTcp4Block);
  out.append(reinterpret_cast<const char*>(s.addr.data()), n);
  out.append(reinterpret_cast<const char*>(d.addr.data()), n);
  out.append(reinterpret_cast<const char*>(&s.port), 2);
  out.append(reinterpret_cast<const char*>(&d.port), 2);
  return out;
}

std::string address_text(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN];
  const char* text = nullptr;
  if (a.ss_family == AF_INET)
    text = ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
  else if (a.ss_family == AF_INET6)
    text =
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof buf);
  else if (a.ss_family == AF_UNIX)
    return "unix";
  return text ? text : "unknown";
}

} // namespace portico::core::proxy_protocol
