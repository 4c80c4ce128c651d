// libFuzzer target for the PROXY protocol codec: any bytes as the first a client sends. parse
// must never crash, and must answer every prefix of the input consistently with the whole: a
// peer that could make a header valid or invalid by how it splits its writes could slip past
// the check. What DONE promises is checked (a bounded header ending where it says, one family
// for both ends), addresses it returns must read back through encode_v1 / encode_v2, and the
// first bytes also make two addresses of their own for encode_* to write and parse to read.
#include "core/proxy_protocol.h"

#include <arpa/inet.h>
#include <sys/un.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace {

namespace pp = portico::core::proxy_protocol;

#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      __builtin_trap();                                                                            \
  } while (0)

constexpr std::string_view kV2Signature{"\r\n\r\n\0\r\nQUIT\n", 12};

bool same_bytes(const sockaddr_storage& a, const sockaddr_storage& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family)
    return false;
  if (a.ss_family == AF_INET) {
    const auto &x = reinterpret_cast<const sockaddr_in&>(a),
               &y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && std::memcmp(&x.sin_addr, &y.sin_addr, 4) == 0;
  }
  if (a.ss_family == AF_INET6) {
    const auto &x = reinterpret_cast<const sockaddr_in6&>(a),
               &y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, 16) == 0;
  }
  if (a.ss_family == AF_UNIX)
    return std::memcmp(reinterpret_cast<const sockaddr_un&>(a).sun_path,
                       reinterpret_cast<const sockaddr_un&>(b).sun_path, 108) == 0;
  return false;
}

bool is_zero(const sockaddr_storage& a) {
  const auto* p = reinterpret_cast<const unsigned char*>(&a);
  return std::all_of(p, p + sizeof a, [](unsigned char c) { return c == 0; });
}

// The text form reads back as the same address.
void check_text(const sockaddr_storage& a) {
  std::string t = pp::address_text(a);
  unsigned char back[16];
  if (a.ss_family == AF_INET) {
    FUZZ_CHECK(inet_pton(AF_INET, t.c_str(), back) == 1);
    FUZZ_CHECK(std::memcmp(back, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, 4) == 0);
  } else if (a.ss_family == AF_INET6) {
    FUZZ_CHECK(inet_pton(AF_INET6, t.c_str(), back) == 1);
    FUZZ_CHECK(std::memcmp(back, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, 16) == 0);
  } else {
    FUZZ_CHECK(t == "unix" || t == "unknown");
  }
}

// What each answer promises, taken alone.
void check_answer(std::string_view in, const pp::Parsed& p) {
  switch (p.status) {
  case pp::Status::NEED_MORE:
    FUZZ_CHECK(in.size() < pp::kMaxHeaderBytes && p.error.empty());
    FUZZ_CHECK(in.empty() || in[0] != 'P' || in.size() < pp::kMaxV1Bytes);
    break;
  case pp::Status::INVALID:
    FUZZ_CHECK(!p.error.empty());
    for (char c : p.error)
      FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f); // no forged log lines
    break;
  case pp::Status::DONE: {
    FUZZ_CHECK(p.error.empty() && p.consumed > 0 && p.consumed <= in.size());
    FUZZ_CHECK(p.consumed <= pp::kMaxHeaderBytes);
    const pp::Header& h = p.header;
    if (h.version == 1) {
      FUZZ_CHECK(in.starts_with("PROXY ") && p.consumed <= pp::kMaxV1Bytes);
      FUZZ_CHECK(in.substr(p.consumed - 2, 2) == "\r\n");
      FUZZ_CHECK(in.substr(0, p.consumed - 2).find_first_of("\r\n") == std::string_view::npos);
    } else {
      FUZZ_CHECK(h.version == 2 && in.starts_with(kV2Signature) && p.consumed >= 16);
      FUZZ_CHECK(p.consumed == 16 + (static_cast<size_t>(static_cast<uint8_t>(in[14])) << 8 |
                                     static_cast<uint8_t>(in[15])));
    }
    if (h.local) {
      FUZZ_CHECK(is_zero(h.source) && is_zero(h.destination));
      break;
    }
    sa_family_t f = h.source.ss_family;
    FUZZ_CHECK(f == h.destination.ss_family);
    FUZZ_CHECK(f == AF_INET || f == AF_INET6 || (h.version == 2 && f == AF_UNIX));
    check_text(h.source);
    check_text(h.destination);
    break;
  }
  }
}

// encode_* of two addresses parses back to them; a family v1 and v2 cannot carry (unix) to local.
// mapped: what IPv4 addresses become when the other side is IPv6.
void check_encodings(const sockaddr_storage& src, const sockaddr_storage& dst,
                     const sockaddr_storage& want_src, const sockaddr_storage& want_dst) {
  bool ip = (src.ss_family == AF_INET || src.ss_family == AF_INET6) &&
            (dst.ss_family == AF_INET || dst.ss_family == AF_INET6);
  for (const std::string& e : {pp::encode_v1(src, dst), pp::encode_v2(src, dst)}) {
    auto p = pp::parse(e);
    FUZZ_CHECK(p.status == pp::Status::DONE && p.consumed == e.size());
    FUZZ_CHECK(p.header.local == !ip);
    if (ip)
      FUZZ_CHECK(same_address(p.header.source, want_src) &&
                 same_address(p.header.destination, want_dst));
  }
}

sockaddr_storage mapped(const sockaddr_storage& a) {
  if (a.ss_family != AF_INET)
    return a;
  sockaddr_storage m{};
  auto& s6 = reinterpret_cast<sockaddr_in6&>(m);
  const auto& s4 = reinterpret_cast<const sockaddr_in&>(a);
  s6.sin6_family = AF_INET6;
  s6.sin6_port = s4.sin_port;
  s6.sin6_addr.s6_addr[10] = s6.sin6_addr.s6_addr[11] = 0xff;
  std::memcpy(&s6.sin6_addr.s6_addr[12], &s4.sin_addr, 4);
  return m;
}

// An address of the family f, its bytes taken from b.
sockaddr_storage make_address(int f, const uint8_t* b) {
  sockaddr_storage a{};
  if (f == AF_INET) {
    auto& s = reinterpret_cast<sockaddr_in&>(a);
    s.sin_family = AF_INET;
    std::memcpy(&s.sin_addr, b, 4);
    std::memcpy(&s.sin_port, b + 4, 2);
  } else if (f == AF_INET6) {
    auto& s = reinterpret_cast<sockaddr_in6&>(a);
    s.sin6_family = AF_INET6;
    std::memcpy(&s.sin6_addr, b, 16);
    std::memcpy(&s.sin6_port, b + 16, 2);
  } else {
    auto& s = reinterpret_cast<sockaddr_un&>(a);
    s.sun_family = AF_UNIX;
    std::memcpy(s.sun_path, b, 18);
  }
  return a;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto whole = pp::parse(in);
  check_answer(in, whole);

  // Every prefix as long as a v1 line, a spread of longer ones, and the two about the end of a
  // header.
  auto check_prefix = [&](size_t k) {
    std::string_view part = in.substr(0, k);
    auto p = pp::parse(part);
    check_answer(part, p);
    if (whole.status == pp::Status::DONE && k >= whole.consumed) {
      FUZZ_CHECK(p.status == pp::Status::DONE && p.consumed == whole.consumed);
      FUZZ_CHECK(p.header.local == whole.header.local && p.header.version == whole.header.version);
      FUZZ_CHECK(same_bytes(p.header.source, whole.header.source) &&
                 same_bytes(p.header.destination, whole.header.destination));
    } else if (whole.status == pp::Status::INVALID) {
      FUZZ_CHECK(p.status != pp::Status::DONE);
    } else {
      FUZZ_CHECK(p.status == pp::Status::NEED_MORE);
    }
  };
  for (size_t k = 0; k < size && k <= pp::kMaxV1Bytes; ++k)
    check_prefix(k);
  for (size_t k = pp::kMaxV1Bytes + 1; k < size; k += size / 16 + 1)
    check_prefix(k);
  if (whole.status == pp::Status::DONE) {
    check_prefix(whole.consumed - 1);
    check_prefix(whole.consumed);
  }

  if (whole.status == pp::Status::DONE && !whole.header.local) {
    const auto &s = whole.header.source, &d = whole.header.destination;
    check_encodings(s, d, s, d);
  }

  if (size >= 1 + 2 * 18) {
    static constexpr int kFamilies[] = {AF_INET, AF_INET6, AF_UNIX, AF_UNSPEC};
    int fs = kFamilies[data[0] & 3], fd = kFamilies[(data[0] >> 2) & 3];
    auto s = make_address(fs, data + 1), d = make_address(fd, data + 19);
    if (fs == AF_UNSPEC)
      s = sockaddr_storage{};
    if (fd == AF_UNSPEC)
      d = sockaddr_storage{};
    bool v6 = fs == AF_INET6 || fd == AF_INET6;
    check_encodings(s, d, v6 ? mapped(s) : s, v6 ? mapped(d) : d);
  }
  return 0;
}
