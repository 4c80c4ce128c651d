#include "options.h"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace portico::backend {

namespace {

constexpr const char* kUsage = R"(usage: portico-backend [options]
  --listen unix:/path[:mode] | HOST:PORT   where to listen (repeatable; default 127.0.0.1:8080)
  --workers N               worker processes (default: number of cores)
  --max-requests N          a worker retires after N requests (default: never)
  --min-requests N          ...after a random count between N and --max-requests
  --keepalive-timeout SECS  idle keep-alive connections close after this (default 5)
  --store shm|memcached://HOST:PORT   where the counter app keeps counts (default shm)
  --document-root DIR       serve static files from DIR
  --pid-file FILE           write the master's pid here
  --max-body BYTES          larger request bodies get 413 (default 1 GiB)
  --h2-max-streams N        SETTINGS_MAX_CONCURRENT_STREAMS per h2c connection (default 256)
  --graceful-timeout SECS   how long old workers may finish on HUP/TERM (default 30)
  --admin HOST:PORT         serve /metrics (Prometheus, all workers) and /healthz from the
                            master (default: off)
Listening sockets inherited from Server::Starter (SERVER_STARTER_PORT) are used when present.
Signals to the master: HUP graceful restart, TERM graceful stop, INT immediate stop,
TTIN/TTOU one worker more/less.
)";

template <typename T> bool parse_number(std::string_view s, T& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

} // namespace

std::optional<Options> parse_options(int argc, char** argv, int* exit_code) {
  Options o;
  *exit_code = 2;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      *exit_code = 0;
      return std::nullopt;
    }
    if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "portico-backend: %s needs a value\n%s", argv[i], kUsage);
      return std::nullopt;
    }
    bool ok = true;
    if (arg == "--listen")
      o.listen.emplace_back(value);
    else if (arg == "--workers")
      ok = parse_number(value, o.workers) && o.workers > 0 && o.workers <= 1024;
    else if (arg == "--max-requests")
      ok = parse_number(value, o.max_requests) && o.max_requests >= 0;
    else if (arg == "--min-requests")
      ok = parse_number(value, o.min_requests) && o.min_requests >= 0;
    else if (arg == "--keepalive-timeout")
      ok = parse_number(value, o.keepalive_timeout) && o.keepalive_timeout > 0;
    else if (arg == "--store")
      o.store = std::string(value);
    else if (arg == "--document-root")
      o.document_root = std::string(value);
    else if (arg == "--pid-file")
      o.pid_file = std::string(value);
    else if (arg == "--max-body")
      ok = parse_number(value, o.max_body_bytes) && o.max_body_bytes >= 0;
    else if (arg == "--h2-max-streams")
      ok = parse_number(value, o.h2_max_streams) && o.h2_max_streams > 0;
    else if (arg == "--graceful-timeout")
      ok = parse_number(value, o.graceful_timeout) && o.graceful_timeout >= 0;
    else if (arg == "--admin")
      ok = !(o.admin = std::string(value)).empty();
    else {
      std::fprintf(stderr, "portico-backend: unknown option %.*s\n%s", int(arg.size()), arg.data(),
                   kUsage);
      return std::nullopt;
    }
    if (!ok) {
      std::fprintf(stderr, "portico-backend: bad value for %.*s: '%.*s'\n", int(arg.size()),
                   arg.data(), int(value.size()), value.data());
      return std::nullopt;
    }
  }
  if (o.store != "shm" && !o.store.starts_with("memcached://")) {
    std::fprintf(stderr, "portico-backend: --store must be shm or memcached://HOST:PORT\n");
    return std::nullopt;
  }
  if (o.min_requests > o.max_requests && o.max_requests > 0) {
    std::fprintf(stderr, "portico-backend: --min-requests is above --max-requests\n");
    return std::nullopt;
  }
  *exit_code = 0;
  return o;
}

} // namespace portico::backend
