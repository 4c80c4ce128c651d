#pragma once
// HAProxy's PROXY protocol, v1 (text) and v2 (binary), as pure functions over bytes: a load
// balancer in front of Portico tells it the client's address in a header before the client's
// own bytes, and Portico can tell an upstream the same. The parser is strict because these
// bytes come from the network: anything the spec does not allow is INVALID, with a reason.
// https://www.haproxy.org/download/2.8/doc/proxy-protocol.txt
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace portico::core::proxy_protocol {

// What the header says. When local (v2 LOCAL, v1 UNKNOWN, v2 PROXY with an UNSPEC family) the
// connection's own addresses stand and source / destination are left zeroed.
struct Header {
  bool local = false;
  sockaddr_storage source{};      // AF_INET or AF_INET6 (v2: AF_UNIX too), port in network order
  sockaddr_storage destination{}; // always the same family as source
  int version = 0;                // 1 or 2
};

enum class Status {
  NEED_MORE, // a prefix of a header that may still be valid: read more and call parse again
  DONE,      // a whole, valid header of `consumed` bytes
  INVALID,   // no more bytes can make it valid: close the connection
};
std::string_view to_string(Status s);

struct Parsed {
  Status status = Status::NEED_MORE;
  size_t consumed = 0; // when DONE: the header's bytes; what follows is the client's first bytes
  Header header;       // when DONE
  std::string error;   // when INVALID: what was wrong, for the error log
};

// The longest v1 line, CRLF included (the spec's figure).
inline constexpr size_t kMaxV1Bytes = 107;
// The longest header accepted at all: a v2 header is 16 bytes plus its length field, which may
// announce up to 64 KiB of TLVs; past this cap it is INVALID as soon as the length is read.
// parse never answers NEED_MORE once it has this many bytes: a buffer this big is enough.
inline constexpr size_t kMaxHeaderBytes = 4096;

// bytes: everything read from the connection so far, from its first byte. Each call decides
// from scratch (no state is kept), and as early as the bytes allow: a first byte that starts
// neither "PROXY " nor the v2 signature is INVALID at once, so a client that sends no header
// is told apart after one byte. v2 LOCAL ignores its address block; v2 PROXY checks that the
// TLVs after the addresses are well framed, that an SSL TLV's sub-TLVs are too, and, when a
// CRC32C TLV is present, the checksum.
Parsed parse(std::string_view bytes);

// The header to send an upstream for a connection from src to dst. IPv4 and IPv6 mixed become
// IPv6 (the IPv4 side IPv4-mapped); any other family (a unix-socket client) gives
// "PROXY UNKNOWN\r\n" / a v2 LOCAL header, so the upstream uses the connection's own addresses.
std::string encode_v1(const sockaddr_storage& src, const sockaddr_storage& dst);
std::string encode_v2(const sockaddr_storage& src, const sockaddr_storage& dst);

// The text form of an address, as ClientConnection spells its peer: "192.0.2.1",
// "2001:db8::1", "::ffff:192.0.2.1" (mapped addresses are kept as they are), "unix" for
// AF_UNIX and "unknown" for anything else.
std::string address_text(const sockaddr_storage& a);

} // namespace portico::core::proxy_protocol
