// portico-backend: a preforked HTTP/1.1 and h2c app server (hello, counter, echo, static files).
#include "core/allocator_tuning.h"
#include "listen_sockets.h"
#include "master.h"
#include "options.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  using namespace portico::backend;
  portico::core::tune_allocator();
  int code = 0;
  auto opts = parse_options(argc, argv, &code);
  if (!opts)
    return code;
  std::signal(SIGPIPE, SIG_IGN);
  const char* starter = std::getenv("SERVER_STARTER_PORT");
  auto sockets =
      starter && opts->listen.empty()
          ? inherit_server_starter_sockets(starter)
          : open_listen_sockets(opts->listen.empty() ? std::vector<std::string>{"127.0.0.1:8080"}
                                                     : opts->listen);
  if (!sockets) {
    std::fprintf(stderr, "portico-backend: %s\n", sockets.error().c_str());
    return 1;
  }
  Master master(std::move(*opts), std::move(*sockets));
  return master.run();
}
