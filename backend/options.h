#pragma once
// portico-backend's command line.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace portico::backend {

struct Options {
  std::vector<std::string> listen; // --listen, repeatable
  int workers = 0;                 // 0: one per core
  long max_requests = 0;           // 0: never retire
  long min_requests = 0;           // retire after a random count in [min, max]
  double keepalive_timeout = 5;
  std::string store = "shm"; // shm | memcached://HOST:PORT
  std::string document_root;
  std::string pid_file;
  long max_body_bytes = 1L << 30; // 413 above
  uint32_t h2_max_streams = 256;  // SETTINGS_MAX_CONCURRENT_STREAMS
  double graceful_timeout = 30;   // how long old workers may finish on HUP/TERM
  std::string admin;              // --admin HOST:PORT: the master's /metrics; empty: off
};

// Parses argv; on error or --help prints to stderr/stdout and returns nullopt with *exit_code.
std::optional<Options> parse_options(int argc, char** argv, int* exit_code);

} // namespace portico::backend
