// The PROXY protocol codec: v1 and v2 parsing, strictness, and encode_v1 / encode_v2 read back.
#include "core/proxy_protocol.h"

#include <arpa/inet.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace portico::core::proxy_protocol {

// So that a failed EXPECT_EQ on a Status says which.
void PrintTo(Status s, std::ostream* os) {
  *os << to_string(s);
}

namespace {

const std::string kSig("\r\n\r\n\0\r\nQUIT\n", 12);
// 192.0.2.1:56324 -> 198.51.100.7:443, as a v2 address block.
const std::string kIp4Block("\xc0\x00\x02\x01\xc6\x33\x64\x07\xdc\x04\x01\xbb", 12);
const std::string kTcp4Line = "PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n";

std::string v2(uint8_t ver_cmd, uint8_t family, const std::string& body) {
  std::string h = kSig;
  h += static_cast<char>(ver_cmd);
  h += static_cast<char>(family);
  h += static_cast<char>(body.size() >> 8);
  h += static_cast<char>(body.size() & 0xff);
  return h + body;
}

std::string tlv(uint8_t type, const std::string& value) {
  std::string t(1, static_cast<char>(type));
  t += static_cast<char>(value.size() >> 8);
  t += static_cast<char>(value.size() & 0xff);
  return t + value;
}

sockaddr_storage ip(const char* text, uint16_t port) {
  sockaddr_storage ss{};
  if (std::strchr(text, ':')) {
    auto& s = reinterpret_cast<sockaddr_in6&>(ss);
    s.sin6_family = AF_INET6;
    s.sin6_port = htons(port);
    EXPECT_EQ(inet_pton(AF_INET6, text, &s.sin6_addr), 1) << text;
  } else {
    auto& s = reinterpret_cast<sockaddr_in&>(ss);
    s.sin_family = AF_INET;
    s.sin_port = htons(port);
    EXPECT_EQ(inet_pton(AF_INET, text, &s.sin_addr), 1) << text;
  }
  return ss;
}

sockaddr_storage unix_socket(const char* path) {
  sockaddr_storage ss{};
  auto& s = reinterpret_cast<sockaddr_un&>(ss);
  s.sun_family = AF_UNIX;
  std::strncpy(s.sun_path, path, sizeof s.sun_path - 1);
  return ss;
}

uint16_t port(const sockaddr_storage& a) {
  return ntohs(a.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in&>(a).sin_port
                                      : reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
}

std::string unix_path(const sockaddr_storage& a) {
  return reinterpret_cast<const sockaddr_un&>(a).sun_path;
}

// "ADDRESS:PORT ADDRESS:PORT": both ends at once, so a failure shows the whole header.
std::string ends(const Header& h) {
  return address_text(h.source) + ":" + std::to_string(port(h.source)) + " " +
         address_text(h.destination) + ":" + std::to_string(port(h.destination));
}

// Every prefix shorter than the header is NEED_MORE, and the header followed by a client's
// bytes is DONE at the header's end: a header may arrive split anywhere.
Parsed parse_fed_byte_by_byte(const std::string& header, const std::string& client) {
  for (size_t i = 0; i < header.size(); ++i) {
    auto p = parse(std::string_view(header).substr(0, i));
    EXPECT_EQ(p.status, Status::NEED_MORE) << "after " << i << " bytes: " << p.error;
  }
  std::string all = header + client;
  auto p = parse(all);
  EXPECT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.consumed, header.size());
  EXPECT_EQ(all.substr(p.consumed), client);
  return p;
}

void expect_invalid(const std::string& bytes, const std::string& why) {
  auto p = parse(bytes);
  EXPECT_EQ(p.status, Status::INVALID) << testing::PrintToString(bytes);
  EXPECT_NE(p.error.find(why), std::string::npos)
      << testing::PrintToString(bytes) << " gave: " << p.error;
}

std::string tcp4_with(const char* src, const char* dst, const char* sport, const char* dport) {
  return std::string("PROXY TCP4 ") + src + " " + dst + " " + sport + " " + dport + "\r\n";
}

// ---- v1 ----

TEST(ProxyProtocolV1, Tcp4) {
  auto p = parse(kTcp4Line + "GET / HTTP/1.1\r\n");
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.consumed, kTcp4Line.size());
  EXPECT_EQ(p.header.version, 1);
  EXPECT_FALSE(p.header.local);
  EXPECT_EQ(p.header.source.ss_family, AF_INET);
  EXPECT_EQ(p.header.destination.ss_family, AF_INET);
  EXPECT_EQ(ends(p.header), "192.0.2.1:56324 198.51.100.7:443");
  EXPECT_TRUE(p.error.empty());
}

TEST(ProxyProtocolV1, Tcp6) {
  auto p = parse("PROXY TCP6 2001:db8::1 2001:DB8::2 51000 8443\r\n");
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.header.source.ss_family, AF_INET6);
  EXPECT_EQ(ends(p.header), "2001:db8::1:51000 2001:db8::2:8443");
  // Mapped addresses stay IPv6; the longest spelling of an address fits.
  p = parse("PROXY TCP6 ::ffff:192.0.2.1 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 0 65535\r\n");
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(ends(p.header), "::ffff:192.0.2.1:0 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff:65535");
}

TEST(ProxyProtocolV1, UnknownLeavesTheConnectionsAddresses) {
  auto p = parse("PROXY UNKNOWN\r\nGET");
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.consumed, 15u);
  EXPECT_TRUE(p.header.local);
  EXPECT_EQ(p.header.version, 1);
  EXPECT_EQ(p.header.source.ss_family, AF_UNSPEC);
}

TEST(ProxyProtocolV1, UnknownIgnoresWhateverFollowsIt) {
  for (const char* line : {"PROXY UNKNOWN 2001:db8::1 2001:db8::2 1 2\r\n", "PROXY UNKNOWN \r\n",
                           "PROXY UNKNOWN junk\tof any\x01kind  at all\r\n"}) {
    auto p = parse(line);
    EXPECT_EQ(p.status, Status::DONE) << line << ": " << p.error;
    EXPECT_EQ(p.consumed, std::strlen(line));
    EXPECT_TRUE(p.header.local);
  }
  expect_invalid("PROXY UNKNOWNX\r\n", "protocol \"UNKNOWNX\"");
  expect_invalid("PROXY UNKNOWN junk\n", "LF without CR");
}

TEST(ProxyProtocolV1, FedByteByByte) {
  auto p = parse_fed_byte_by_byte(kTcp4Line, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(ends(p.header), "192.0.2.1:56324 198.51.100.7:443");
  parse_fed_byte_by_byte("PROXY UNKNOWN 1 2 3\r\n", "\x16\x03\x01");
  parse_fed_byte_by_byte("PROXY TCP6 ::1 ::1 0 1\r\n", "");
}

TEST(ProxyProtocolV1, PortsAreDecimalWithOneSpelling) {
  for (const char* bad :
       {"65536", "99999", "123456", "01", "00", "0443", "-1", "+1", "1a", "0x1", "1.0", "\xd9\xa1"})
    expect_invalid(tcp4_with("192.0.2.1", "198.51.100.7", bad, "443"), "source port");
  expect_invalid(tcp4_with("192.0.2.1", "198.51.100.7", "1", "65536"), "destination port");
  auto p = parse(tcp4_with("192.0.2.1", "198.51.100.7", "0", "65535"));
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(ends(p.header), "192.0.2.1:0 198.51.100.7:65535");
}

TEST(ProxyProtocolV1, AddressesMustParseInTheirFamily) {
  for (const char* bad : {"::1", "256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "localhost",
                          "1.2.3.4/8", "0x7f.0.0.1", "1.2.3.4:80"})
    expect_invalid(tcp4_with(bad, "198.51.100.7", "1", "2"), "source address");
  expect_invalid(tcp4_with("192.0.2.1", "2001:db8::1", "1", "2"), "destination address");
  for (const char* bad :
       {"192.0.2.1", ":::1", "2001:db8::1%eth0", "[::1]", "2001:db8::g", "1:2:3:4:5:6:7:8:9"})
    expect_invalid(std::string("PROXY TCP6 ") + bad + " ::1 1 2\r\n", "source address");
}

TEST(ProxyProtocolV1, ExactlyOneSpaceBetweenFields) {
  expect_invalid("PROXY  TCP4 192.0.2.1 198.51.100.7 1 2\r\n", "protocol \"\"");
  expect_invalid("PROXY TCP4  192.0.2.1 198.51.100.7 1 2\r\n", "empty source address");
  expect_invalid("PROXY TCP4 192.0.2.1  198.51.100.7 1 2\r\n", "empty destination address");
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 1  2\r\n", "empty destination port");
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 1 2 \r\n", "after the destination port");
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 1 2 3\r\n", "after the destination port");
  expect_invalid("PROXY TCP4 192.0.2.1\t198.51.100.7 1 2\r\n", "source address");
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 1\r\n", "3 of the 4 fields");
  expect_invalid("PROXY TCP4 192.0.2.1\r\n", "1 of the 4 fields");
  expect_invalid("PROXY TCP4\r\n", "TCP4 without addresses");
  expect_invalid("PROXY TCP4 \r\n", "empty source address");
  expect_invalid("PROXY \r\n", "protocol \"\"");
  expect_invalid("PROXY\r\n", "does not start with \"PROXY \"");
}

TEST(ProxyProtocolV1, KeywordsAreCaseSensitive) {
  expect_invalid("proxy TCP4 192.0.2.1 198.51.100.7 1 2\r\n", "first byte 0x70");
  expect_invalid("Proxy TCP4 192.0.2.1 198.51.100.7 1 2\r\n", "does not start with \"PROXY \"");
  expect_invalid("PROXY tcp4 192.0.2.1 198.51.100.7 1 2\r\n", "protocol \"tcp4\"");
  expect_invalid("PROXY unknown\r\n", "protocol \"unknown\"");
  expect_invalid("PROXY TCP5 192.0.2.1 198.51.100.7 1 2\r\n", "protocol \"TCP5\"");
  expect_invalid("PROXY UDP4 192.0.2.1 198.51.100.7 1 2\r\n", "protocol \"UDP4\"");
}

TEST(ProxyProtocolV1, OnlyCrlfEndsTheLineAndOnlyThere) {
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 1 2\n", "LF without CR");
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 1 2\rX", "CR not followed by LF");
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 1 2\n\r", "LF without CR");
  expect_invalid("PROXY TCP4 192.0.2.1\r198.51.100.7 1 2\r\n", "CR not followed by LF");
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 1 2\r\r\n", "CR not followed by LF");
  // A CR as the last byte read so far may still be followed by its LF.
  EXPECT_EQ(parse("PROXY TCP4 192.0.2.1 198.51.100.7 1 2\r").status, Status::NEED_MORE);
}

TEST(ProxyProtocolV1, LongestLineIs107Bytes) {
  // The spec's worst case, exactly 107 bytes.
  std::string longest = "PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n";
  longest.insert(20, std::string(107 - longest.size(), 'f'));
  ASSERT_EQ(longest.size(), kMaxV1Bytes);
  auto p = parse(longest + "GET");
  EXPECT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.consumed, kMaxV1Bytes);
  // One byte more and the CRLF does not fit: rejected once 107 bytes are in, CR or not.
  std::string over = longest;
  over.insert(20, "f");
  EXPECT_EQ(parse(over.substr(0, 106)).status, Status::NEED_MORE);
  expect_invalid(over.substr(0, 107), "no CRLF within the first 107 bytes");
  expect_invalid(over, "no CRLF within the first 107 bytes");
  expect_invalid("PROXY UNKNOWN " + std::string(4000, 'a'), "no CRLF within the first 107 bytes");
}

// ---- decided as early as the bytes allow ----

TEST(ProxyProtocol, RejectsAClientThatSentNoHeaderAtItsFirstByte) {
  EXPECT_EQ(parse("").status, Status::NEED_MORE);
  expect_invalid("G", "first byte 0x47 (\"G\")");
  expect_invalid("GET / HTTP/1.1\r\n", "starts neither \"PROXY \" nor the v2 signature");
  expect_invalid("\x16\x03\x01", "first byte 0x16");
  expect_invalid(std::string(1, '\0'), "first byte 0x00 (\"\\x00\")");
  expect_invalid("PRI * HTTP/2.0\r\n", "\"PRI * \" does not start with \"PROXY \"");
}

TEST(ProxyProtocol, RejectsAnImpossiblePrefixBeforeTheLineEnds) {
  EXPECT_EQ(parse("PROX").status, Status::NEED_MORE);
  EXPECT_EQ(parse("PROXY TC").status, Status::NEED_MORE);
  EXPECT_EQ(parse("PROXY UNKN").status, Status::NEED_MORE);
  EXPECT_EQ(parse("PROXY TCP4 192.0.2.1 198.51.100.7 1").status, Status::NEED_MORE);
  EXPECT_EQ(parse("PROXY TCP6 2001:db8:").status, Status::NEED_MORE);
  expect_invalid("PROXY TCP5", "protocol \"TCP5\"");
  expect_invalid("PROXY UNKNOWNS", "protocol \"UNKNOWNS\"");
  expect_invalid("PROXY TCP4 192.0.2.1x", "source address");
  expect_invalid("PROXY TCP4 999.1.1.1 ", "source address");
  expect_invalid("PROXY TCP4 1234567890123456", "source address");
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 070", "leading zero");
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 65536", "over 65535");
  expect_invalid("PROXY TCP4 192.0.2.1 198.51.100.7 1 2 ", "after the destination port");
  EXPECT_EQ(parse("\r\n\r\n").status, Status::NEED_MORE);
  expect_invalid("\r\n\r\nX", "not the 12-byte signature");
  expect_invalid(kSig + "\x11", "version 1");
  expect_invalid(kSig + "\x21\x12", "family and transport 0x12");
  expect_invalid(kSig + "\x21\x11\xff\xff", "over the 4096-byte cap");
}

TEST(ProxyProtocol, ErrorsEscapeWhatThePeerSent) {
  auto p = parse("PROXY TCP4 1.2.3.4\x1b[2J\" 5.6.7.8 1 2\r\n");
  ASSERT_EQ(p.status, Status::INVALID);
  EXPECT_NE(p.error.find("\\x1b[2J\\x22"), std::string::npos) << p.error;
  EXPECT_EQ(p.error.find('\x1b'), std::string::npos);
}

// ---- v2 ----

TEST(ProxyProtocolV2, Tcp4) {
  std::string h = v2(0x21, 0x11, kIp4Block);
  std::string hello("\x16\x03\x01\x00\x05hello", 10);
  auto p = parse(h + hello);
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.consumed, 28u);
  EXPECT_EQ(p.header.version, 2);
  EXPECT_FALSE(p.header.local);
  EXPECT_EQ(p.header.source.ss_family, AF_INET);
  EXPECT_EQ(ends(p.header), "192.0.2.1:56324 198.51.100.7:443");
  EXPECT_EQ((h + hello).substr(p.consumed), hello);
}

TEST(ProxyProtocolV2, Tcp6) {
  std::string block("\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01"
                    "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x02"
                    "\xc7\x38\x20\xfb",
                    36);
  auto p = parse(v2(0x21, 0x21, block));
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.consumed, 52u);
  EXPECT_EQ(p.header.source.ss_family, AF_INET6);
  EXPECT_EQ(ends(p.header), "2001:db8::1:51000 2001:db8::2:8443");
}

TEST(ProxyProtocolV2, UnixStream) {
  std::string src("/run/lb/client.sock"), dst("/run/portico.sock");
  src.resize(108);
  dst.resize(108);
  auto p = parse(v2(0x21, 0x31, src + dst));
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.consumed, 16u + 216u);
  EXPECT_FALSE(p.header.local);
  EXPECT_EQ(p.header.source.ss_family, AF_UNIX);
  EXPECT_EQ(unix_path(p.header.source), "/run/lb/client.sock");
  EXPECT_EQ(unix_path(p.header.destination), "/run/portico.sock");
  EXPECT_EQ(address_text(p.header.source), "unix");
}

TEST(ProxyProtocolV2, LocalIgnoresItsFamilyAndAddressBlock) {
  // A health check from the load balancer itself: its family and block are to be skipped.
  for (const auto& h : {v2(0x20, 0x00, ""), v2(0x20, 0x11, kIp4Block), v2(0x20, 0xff, "junk\x01"),
                        v2(0x20, 0x12, std::string(3, '\x01'))}) {
    auto p = parse(h + "GET");
    ASSERT_EQ(p.status, Status::DONE) << p.error;
    EXPECT_EQ(p.consumed, h.size());
    EXPECT_TRUE(p.header.local);
    EXPECT_EQ(p.header.version, 2);
    EXPECT_EQ(p.header.source.ss_family, AF_UNSPEC);
  }
}

TEST(ProxyProtocolV2, ProxyWithUnspecFamilyIsLocal) {
  auto p = parse(v2(0x21, 0x00, tlv(0x04, "")));
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_TRUE(p.header.local);
  // Its bytes are TLVs from the start, held to the same framing.
  expect_invalid(v2(0x21, 0x00, "\x04\x00"), "cut short");
}

TEST(ProxyProtocolV2, FedByteByByte) {
  std::string h = v2(0x21, 0x11, kIp4Block + tlv(0x01, "h2") + tlv(0x02, "example.com"));
  auto p = parse_fed_byte_by_byte(h, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  EXPECT_EQ(ends(p.header), "192.0.2.1:56324 198.51.100.7:443");
  parse_fed_byte_by_byte(v2(0x20, 0x00, ""), "GET");
}

TEST(ProxyProtocolV2, TlvsAfterTheAddressesAreSkipped) {
  std::string ssl = tlv(0x20, std::string("\x01\0\0\0\0", 5) + tlv(0x21, "TLSv1.3") +
                                  tlv(0x23, "TLS_AES_128_GCM_SHA256"));
  std::string h =
      v2(0x21, 0x11,
         kIp4Block + tlv(0x01, "h2") + tlv(0x02, "example.com") + ssl + tlv(0x05, "id-1") +
             tlv(0xea, "vpce-0123") + tlv(0x04, "") + tlv(0x20, std::string(5, '\0')));
  auto p = parse(h + "rest");
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.consumed, h.size());
  EXPECT_EQ(ends(p.header), "192.0.2.1:56324 198.51.100.7:443");
}

TEST(ProxyProtocolV2, MalformedTlvsAreRejected) {
  expect_invalid(v2(0x21, 0x11, kIp4Block + "\x01"), "TLV at byte 28 cut short: 1 of its 3");
  expect_invalid(v2(0x21, 0x11, kIp4Block + tlv(0x01, "h2") + std::string("\x01\x00", 2)),
                 "TLV at byte 33 cut short: 2 of its 3");
  std::string overrun = tlv(0x02, "example.com");
  overrun[2] = 12; // one past the block
  expect_invalid(v2(0x21, 0x11, kIp4Block + overrun), "length 12 runs past the header");
  expect_invalid(v2(0x21, 0x11, kIp4Block + tlv(0x20, "\x01\0\0\0")),
                 "shorter than its client and verify fields");
  std::string sub = tlv(0x21, "TLSv1.3");
  sub[2] = 8;
  expect_invalid(v2(0x21, 0x11, kIp4Block + tlv(0x20, std::string(5, '\0') + sub)),
                 "runs past the SSL TLV");
  expect_invalid(v2(0x21, 0x11, kIp4Block + tlv(0x03, "abc")), "CRC32C TLV of 3 bytes");
}

TEST(ProxyProtocolV2, Crc32cIsChecked) {
  // Computed apart from Portico (CRC32C of "123456789" being 0xe3069283 checked first):
  // kIp4Block, ALPN "h2", CRC32C 0xd75eaea3.
  const std::string good =
      v2(0x21, 0x11, kIp4Block + tlv(0x01, "h2") + tlv(0x03, std::string("\xd7\x5e\xae\xa3", 4)));
  auto p = parse(good);
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(ends(p.header), "192.0.2.1:56324 198.51.100.7:443");
  std::string bad = good;
  bad[19] ^= 1; // 192.0.2.0: the client's address altered on the way
  expect_invalid(bad, "CRC32C TLV does not match");
  bad = good;
  bad.back() ^= 1;
  expect_invalid(bad, "CRC32C TLV does not match");
  expect_invalid(
      v2(0x21, 0x11, kIp4Block + tlv(0x03, std::string(4, '\0')) + tlv(0x03, std::string(4, '\0'))),
      "two CRC32C TLVs");
}

TEST(ProxyProtocolV2, OnlyVersion2) {
  for (int vc : {0x01, 0x11, 0x31, 0xf1, 0x00})
    expect_invalid(v2(static_cast<uint8_t>(vc), 0x11, kIp4Block), "not 2");
}

TEST(ProxyProtocolV2, OnlyLocalAndProxyCommands) {
  for (int vc = 0x22; vc <= 0x2f; ++vc)
    expect_invalid(v2(static_cast<uint8_t>(vc), 0x11, kIp4Block),
                   "neither LOCAL (0) nor PROXY (1)");
}

TEST(ProxyProtocolV2, ProxyOnlyOverStreams) {
  for (int fam : {0x12, 0x22, 0x32, 0x01, 0x02, 0x10, 0x20, 0x30, 0x41, 0xff})
    expect_invalid(v2(0x21, static_cast<uint8_t>(fam), std::string(216, '\0')),
                   "family and transport 0x");
}

TEST(ProxyProtocolV2, LengthMustCoverTheAddresses) {
  expect_invalid(v2(0x21, 0x11, kIp4Block.substr(0, 11)), "length 11 is shorter than the 12-byte");
  expect_invalid(v2(0x21, 0x21, std::string(35, '\0')), "length 35 is shorter than the 36-byte");
  expect_invalid(v2(0x21, 0x31, std::string(215, '\0')), "length 215 is shorter than the 216-byte");
  // Decided from the 16 fixed bytes, before the block arrives.
  expect_invalid(v2(0x21, 0x21, std::string(35, '\0')).substr(0, 16), "shorter than the 36-byte");
  EXPECT_EQ(parse(v2(0x21, 0x21, std::string(36, '\0'))).status, Status::DONE);
}

TEST(ProxyProtocolV2, LengthIsCapped) {
  // Filled with one TLV up to exactly kMaxHeaderBytes.
  std::string fill = tlv(0xe0, std::string(kMaxHeaderBytes - 16 - 12 - 3, 'x'));
  std::string h = v2(0x21, 0x11, kIp4Block + fill);
  ASSERT_EQ(h.size(), kMaxHeaderBytes);
  auto p = parse(h);
  EXPECT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.consumed, kMaxHeaderBytes);
  EXPECT_EQ(parse(h.substr(0, kMaxHeaderBytes - 1)).status, Status::NEED_MORE);
  expect_invalid(v2(0x21, 0x11, kIp4Block + fill + "x").substr(0, 16), "over the 4096-byte cap");
  expect_invalid(v2(0x20, 0x00, std::string(65535, '\0')), "length 65535");
}

TEST(ProxyProtocolV2, EveryByteOfTheSignatureCounts) {
  std::string h = v2(0x21, 0x11, kIp4Block);
  for (size_t i = 0; i < 12; ++i) {
    std::string bad = h;
    bad[i] ^= 0x20;
    EXPECT_EQ(parse(bad).status, Status::INVALID) << "byte " << i;
  }
}

// ---- encoding ----

TEST(ProxyProtocolEncode, V1ReadsBack) {
  auto src = ip("192.0.2.1", 56324), dst = ip("198.51.100.7", 443);
  EXPECT_EQ(encode_v1(src, dst), kTcp4Line);
  for (const auto& [s, d] :
       {std::pair{ip("2001:db8::1", 0), ip("2001:db8::2", 65535)},
        std::pair{ip("0.0.0.0", 0), ip("255.255.255.255", 65535)},
        std::pair{ip("::", 1), ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 2)}}) {
    std::string line = encode_v1(s, d);
    auto p = parse(line);
    ASSERT_EQ(p.status, Status::DONE) << line << ": " << p.error;
    EXPECT_EQ(p.consumed, line.size());
    EXPECT_EQ(p.header.version, 1);
    EXPECT_EQ(std::memcmp(&p.header.source, &s, sizeof s), 0) << line;
    EXPECT_EQ(std::memcmp(&p.header.destination, &d, sizeof d), 0) << line;
  }
}

TEST(ProxyProtocolEncode, V2ReadsBack) {
  auto src = ip("192.0.2.1", 56324), dst = ip("198.51.100.7", 443);
  EXPECT_EQ(encode_v2(src, dst), v2(0x21, 0x11, kIp4Block));
  for (const auto& [s, d] :
       {std::pair{src, dst}, std::pair{ip("2001:db8::1", 0), ip("::1", 65535)}}) {
    std::string h = encode_v2(s, d);
    auto p = parse(h);
    ASSERT_EQ(p.status, Status::DONE) << p.error;
    EXPECT_EQ(p.consumed, h.size());
    EXPECT_EQ(p.header.version, 2);
    EXPECT_FALSE(p.header.local);
    EXPECT_EQ(std::memcmp(&p.header.source, &s, sizeof s), 0);
    EXPECT_EQ(std::memcmp(&p.header.destination, &d, sizeof d), 0);
  }
}

TEST(ProxyProtocolEncode, MixedFamiliesBecomeIpv6) {
  auto src = ip("192.0.2.1", 1000), dst = ip("2001:db8::2", 443);
  EXPECT_EQ(encode_v1(src, dst), "PROXY TCP6 ::ffff:192.0.2.1 2001:db8::2 1000 443\r\n");
  auto p = parse(encode_v2(src, dst));
  ASSERT_EQ(p.status, Status::DONE) << p.error;
  EXPECT_EQ(p.header.source.ss_family, AF_INET6);
  EXPECT_EQ(ends(p.header), "::ffff:192.0.2.1:1000 2001:db8::2:443");
}

TEST(ProxyProtocolEncode, UnixClientIsUnknownOrLocal) {
  auto client = unix_socket(""), listener = unix_socket("/run/portico.sock");
  EXPECT_EQ(encode_v1(client, listener), "PROXY UNKNOWN\r\n");
  EXPECT_EQ(encode_v2(client, listener), v2(0x20, 0x00, ""));
  EXPECT_EQ(encode_v1(ip("192.0.2.1", 1), sockaddr_storage{}), "PROXY UNKNOWN\r\n");
  for (const auto& h : {encode_v1(client, listener), encode_v2(client, listener)}) {
    auto p = parse(h);
    ASSERT_EQ(p.status, Status::DONE) << p.error;
    EXPECT_EQ(p.consumed, h.size());
    EXPECT_TRUE(p.header.local);
  }
}

TEST(ProxyProtocol, AddressText) {
  EXPECT_EQ(address_text(ip("192.0.2.1", 1)), "192.0.2.1");
  EXPECT_EQ(address_text(ip("2001:db8::1", 1)), "2001:db8::1");
  EXPECT_EQ(address_text(ip("::ffff:192.0.2.1", 1)), "::ffff:192.0.2.1");
  EXPECT_EQ(address_text(unix_socket("/run/a.sock")), "unix");
  EXPECT_EQ(address_text(sockaddr_storage{}), "unknown");
  EXPECT_EQ(to_string(Status::NEED_MORE), "NEED_MORE");
}

} // namespace
} // namespace portico::core::proxy_protocol
