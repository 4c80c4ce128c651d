#include "quic/udp_socket.h"

#include <cerrno>
#include <cstring>
#include <linux/filter.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::quic {

namespace {
std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Another process's socket on the address would take a share of our packets: refused, as
// open_listener refuses a TCP port someone listens on.
bool address_taken(const addrinfo* ai) {
  int fd = ::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return false;
  if (ai->ai_family == AF_INET6) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  }
  bool taken = ::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno == EADDRINUSE;
  ::close(fd);
  return taken;
}
} // namespace

core::expected<int, std::string> open_udp(const core::ListenAddress& a, bool first) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(a.port);
  if (int rc = ::getaddrinfo(a.host.empty() ? nullptr : a.host.c_str(), port.c_str(), &hints, &res);
      rc != 0)
    return core::unexpected(a.text + " (quic): " + gai_strerror(rc));
  if (first && address_taken(res)) {
    ::freeaddrinfo(res);
    return core::unexpected("bind " + a.text + " (quic, UDP): address already in use");
  }
  int fd = ::socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    return core::unexpected(errno_text("socket"));
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (res->ai_family == AF_INET6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one);
  } else {
    ::setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
    ::setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
  }
  if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
    std::string why = errno_text("bind " + a.text + " (quic, UDP)");
    ::close(fd);
    ::freeaddrinfo(res);
    return core::unexpected(why);
  }
  ::freeaddrinfo(res);
  return fd;
}

core::expected<void, std::string> attach_steering(int fd) {
  // Classic BPF (no eBPF loader needed): the program sees the UDP payload. A return beyond
  // the group's sockets makes the kernel fall back to its hash.
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),            // A = first byte
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x80, 2, 0), // long header: to the hash
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 1),            // A = DCID's first byte
      BPF_STMT(BPF_RET | BPF_A, 0),                     // socket number A
      BPF_STMT(BPF_RET | BPF_K, 0xffffffff),            // no such socket: the hash
  };
  sock_fprog prog{static_cast<unsigned short>(std::size(code)), code};
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog) != 0)
    return core::unexpected(errno_text("SO_ATTACH_REUSEPORT_CBPF"));
  return {};
}

} // namespace portico::quic
