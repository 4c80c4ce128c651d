#pragma once
// Where an upstream lives: "unix:/path", "IP:PORT", "[v6]:PORT", or "name:PORT" (resolved with
// c-ares by the cluster, re-resolved when the answer expires); the config loader checks
// endpoints and resolvers with the same parser the clusters use.
#include "core/expected.h"

#include <optional>
#include <string>
#include <string_view>
#include <sys/socket.h>

namespace portico::core {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t len = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

struct EndpointSpec {
  std::string text; // as configured, for logs and metric labels
  bool is_unix = false;
  std::string path; // unix
  std::string host; // TCP: numeric address or a name to resolve
  int port = 0;
  bool numeric = false; // host is an IP literal: no resolver needed
};

// The endpoint text parsed, or why it is not one ("is a URL; an endpoint is unix:/path or
// HOST:PORT", "has a port that is not 1 to 65535", ...), to follow the endpoint in a message.
expected<EndpointSpec, std::string> parse_endpoint(std::string_view text);
// The socket address of a unix or numeric endpoint.
std::optional<SocketAddress> literal_address(const EndpointSpec& e);
// Starts a non-blocking connect. Returns the fd (connect in progress or done) or -1 with errno;
// *done, when given, says whether it is done already (a unix socket's backlog took it).
int connect_nonblocking(const SocketAddress& a, bool* done = nullptr);
// Once the socket is writable: whether that connect succeeded.
bool connect_succeeded(int fd);

} // namespace portico::core
