#pragma once
// The master's listening sockets: bound from --listen, or inherited from Server::Starter
// through SERVER_STARTER_PORT ("127.0.0.1:8080=3;/tmp/app.sock=4").
#include "core/expected.h"

#include <string>
#include <vector>

namespace portico::backend {

struct ListenSocket {
  int fd = -1;
  std::string name;      // as given, for logs
  std::string unix_path; // bound here by us: removed on exit
};

// One socket per address, or why one of them cannot be bound (none is left open then).
core::expected<std::vector<ListenSocket>, std::string>
open_listen_sockets(const std::vector<std::string>& addresses);
// The sockets SERVER_STARTER_PORT names, or why it is malformed or names none.
core::expected<std::vector<ListenSocket>, std::string>
inherit_server_starter_sockets(const char* env);

} // namespace portico::backend
