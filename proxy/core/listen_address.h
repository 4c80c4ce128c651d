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
  std::string text; // as written, for logs
};

// The address, or why s is not one.
core::expected<ListenAddress, std::string> parse_listen_address(std::string_view s);

// Whether binding both would take the same socket: the same unix path, or the same port where
// the hosts are equal or one is a wildcard of the other's family. (SO_REUSEPORT would let both
// bind, and split the connections between them.)
bool same_socket(const ListenAddress& a, const ListenAddress& b);

// Binds and listens: the fd (non-blocking, close-on-exec), or what failed.
// A stale unix socket file left by a dead server is replaced; a live one is an error.
core::expected<int, std::string> open_listener(const ListenAddress& a, int backlog,
                                               bool reuse_port);

} // namespace portico::core
