// The connection's peer and local addresses: from the socket, or from the PROXY protocol
// header a load balancer in front sends first (then what the socket says is the balancer).
#include "server/client_connection.h"

#include "core/error_log.h"
#include "core/proxy_protocol.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>

namespace portico::server {

void ClientConnection::set_peer_text(const sockaddr_storage& ss) {
  const char* text = "unix";
  if (ss.ss_family == AF_INET)
    text = ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, peer_,
                       sizeof peer_);
  else if (ss.ss_family == AF_INET6)
    text = ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, peer_,
                       sizeof peer_);
  if (text != peer_)
    std::strncpy(peer_, text ? text : "unknown", sizeof peer_ - 1);
  peer_len_ = static_cast<uint8_t>(std::strlen(peer_));
}

void ClientConnection::socket_addresses(sockaddr_storage& peer, sockaddr_storage& local) const {
  if (!local_known_) {
    socklen_t len = sizeof local_ss_;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&local_ss_), &len) != 0)
      local_ss_.ss_family = AF_UNSPEC;
    local_known_ = true;
  }
  peer = peer_ss_;
  local = local_ss_;
}

bool ClientConnection::read_proxy_header() {
  namespace pp = core::proxy_protocol;
  if (first_byte_ == 0)
    first_byte_ = ev_now(loop()); // header_timeout runs from here, as for a request head
  char buf[pp::kMaxHeaderBytes];
  size_t have = proxy_header_.size();
  ssize_t n = ::recv(fd_, buf + have, sizeof buf - have, MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return false;
  if (n <= 0) {
    close_now();
    return false;
  }
  std::memcpy(buf, proxy_header_.data(), have);
  pp::Parsed p = pp::parse({buf, have + static_cast<size_t>(n)});
  if (p.status == pp::Status::INVALID) {
    core::log::write(core::log::Level::WARN, core::log::Kind::PROXY_HEADER,
                     "listener %u: connection from %.*s closed: %s",
                     static_cast<unsigned>(listener_), static_cast<int>(peer_len_), peer_,
                     p.error.c_str());
    close_now();
    return false;
  }
  // Take only header bytes off the socket: all of what came while it is incomplete (a
  // complete one would have parsed), exactly its rest once it is.
  size_t take = p.status == pp::Status::DONE ? p.consumed - have : static_cast<size_t>(n);
  if (::recv(fd_, buf + have, take, 0) != static_cast<ssize_t>(take)) {
    close_now();
    return false;
  }
  if (p.status == pp::Status::NEED_MORE) {
    proxy_header_.append(buf + have, take);
    return false;
  }
  set_stage(tls_ ? Stage::TLS_HANDSHAKE : Stage::PROTOCOL);
  proxy_header_ = std::string();
  first_byte_ = 0; // what follows is timed as it would be without the header
  if (!p.header.local) {
    peer_ss_ = p.header.source;
    local_ss_ = p.header.destination;
    local_known_ = true;
    set_peer_text(peer_ss_);
  }
  return true;
}

} // namespace portico::server
