#pragma once
// The master's listening sockets: bound from --listen, or inherited from Server::Starter
// through SERVER_STARTER_PORT ("127.0.0.1:8080=3;/tmp/app.sock=4").
#include <string>
#include <vector>

namespace portico::backend {

struct ListenSocket {
  int fd = -1;
  std::string name;      // as given, for logs
  std::string unix_path; // bound here by us: removed on exit
};

// Returns false with *error set when any address cannot be bound.
bool open_listen_sockets(const std::vector<std::string>& addresses, std::vector<ListenSocket>* out,
                         std::string* error);
// Parses SERVER_STARTER_PORT; false when it is malformed.
bool inherit_server_starter_sockets(const char* env, std::vector<ListenSocket>* out,
                                    std::string* error);

} // namespace portico::backend
