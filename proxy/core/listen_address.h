#pragma once
// Where a server listens: "unix:/path[:mode]" or "HOST:PORT" ("[::1]:PORT" for IPv6).
#include "core/expected.h"
#include <string>
#include <string_view>

namespace portico::core {

struct ListenAddress {
  enum class Kind { TCP, UNIX };
  Kind kind = Kind::TCP;
  std::string host; // TCP: numeric address or name
  int port = 0;     // TCP
  std::string path; // UNIX
  int mode = -1;    // UNIX: chmod after bind, -1 = leave to umask
  int uid = -1;     // UNIX: chown after bind (before listen), -1 = leave as it is
  int gid = -1;
  std::string text; // as written, for logs
};

// The address, or why s is not one.
core::expected<ListenAddress, std::string> parse_listen_address(std::string_view s);

// Whether binding both would take the same socket: the same unix path, or the same port where
// the hosts are equal or one is a wildcard of the other's family. (SO_REUSEPORT would let both
// bind, and split the connections between them.)
bool same_socket(const ListenAddress& a, const ListenAddress& b);

// How a TCP listening socket shares its port. SO_REUSEPORT lets every socket of the same user
// join a group and take a share of the connections, another process's as gladly as one's own:
// the first socket of a group therefore makes sure that nobody listens on the address yet.
enum class PortSharing {
  NONE,       // the port is this socket's alone
  NEW_GROUP,  // the first of a SO_REUSEPORT group: any listener on the address is an error
  JOIN_GROUP, // one more socket of a group this process began (or an upgrade handed over)
};

// Binds and listens: the fd (non-blocking, close-on-exec), or what failed.
// A stale unix socket file left by a dead server is replaced; a live one is an error.
// sharing applies to TCP only.
core::expected<int, std::string> open_listener(const ListenAddress& a, int backlog,
                                               PortSharing sharing);

} // namespace portico::core
