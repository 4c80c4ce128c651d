#include "options.h"

#include "core/build_info.h"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <getopt.h>
#include <string_view>

#ifndef PROMETHEUS_CPP_VERSION
#define PROMETHEUS_CPP_VERSION "unknown"
#endif

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
  -v, --version             print the version
  -V, --build-info          print the version, build type, compiler and every library's version
  -h, --help                this text
Listening sockets inherited from Server::Starter (SERVER_STARTER_PORT) are used when present.
Signals to the master: HUP graceful restart, TERM graceful stop, INT immediate stop,
TTIN/TTOU one worker more/less.
)";

template <typename T> bool parse_number(std::string_view s, T& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

void print_build_info() {
  auto libs = core::core_components();
  libs.push_back({"prometheus-cpp", PROMETHEUS_CPP_VERSION " (as built)"});
  core::print_build_info(stdout, "portico-backend", libs);
}

} // namespace

std::optional<Options> parse_options(int argc, char** argv, int* exit_code) {
  enum : int {
    kListen = 256,
    kWorkers,
    kMaxRequests,
    kMinRequests,
    kKeepalive,
    kStore,
    kRoot,
    kPidFile,
    kMaxBody,
    kH2Streams,
    kGraceful,
    kAdmin,
  };
  static const option kLong[] = {{"listen", required_argument, nullptr, kListen},
                                 {"workers", required_argument, nullptr, kWorkers},
                                 {"max-requests", required_argument, nullptr, kMaxRequests},
                                 {"min-requests", required_argument, nullptr, kMinRequests},
                                 {"keepalive-timeout", required_argument, nullptr, kKeepalive},
                                 {"store", required_argument, nullptr, kStore},
                                 {"document-root", required_argument, nullptr, kRoot},
                                 {"pid-file", required_argument, nullptr, kPidFile},
                                 {"max-body", required_argument, nullptr, kMaxBody},
                                 {"h2-max-streams", required_argument, nullptr, kH2Streams},
                                 {"graceful-timeout", required_argument, nullptr, kGraceful},
                                 {"admin", required_argument, nullptr, kAdmin},
                                 {"version", no_argument, nullptr, 'v'},
                                 {"build-info", no_argument, nullptr, 'V'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  Options o;
  *exit_code = 2;
  optind = 1;
  for (int c; (c = getopt_long(argc, argv, "vVh", kLong, nullptr)) != -1;) {
    std::string_view value = optarg ? optarg : "";
    bool ok = true;
    switch (c) {
    case kListen: o.listen.emplace_back(value); break;
    case kWorkers: ok = parse_number(value, o.workers) && o.workers > 0 && o.workers <= 1024; break;
    case kMaxRequests: ok = parse_number(value, o.max_requests) && o.max_requests >= 0; break;
    case kMinRequests: ok = parse_number(value, o.min_requests) && o.min_requests >= 0; break;
    case kKeepalive:
      ok = parse_number(value, o.keepalive_timeout) && o.keepalive_timeout > 0;
      break;
    case kStore: o.store = std::string(value); break;
    case kRoot: o.document_root = std::string(value); break;
    case kPidFile: o.pid_file = std::string(value); break;
    case kMaxBody: ok = parse_number(value, o.max_body_bytes) && o.max_body_bytes >= 0; break;
    case kH2Streams: ok = parse_number(value, o.h2_max_streams) && o.h2_max_streams > 0; break;
    case kGraceful: ok = parse_number(value, o.graceful_timeout) && o.graceful_timeout >= 0; break;
    case kAdmin: ok = !(o.admin = std::string(value)).empty(); break;
    case 'v':
      std::printf("portico-backend %s\n", PORTICO_VERSION_STRING);
      *exit_code = 0;
      return std::nullopt;
    case 'V':
      print_build_info();
      *exit_code = 0;
      return std::nullopt;
    case 'h':
      std::fputs(kUsage, stdout);
      *exit_code = 0;
      return std::nullopt;
    default: // getopt_long has said what was wrong
      std::fputs(kUsage, stderr);
      return std::nullopt;
    }
    if (!ok) {
      std::fprintf(stderr, "portico-backend: bad value for --%s: '%.*s'\n", kLong[c - kListen].name,
                   int(value.size()), value.data());
      return std::nullopt;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "portico-backend: unexpected argument '%s'\n%s", argv[optind], kUsage);
    return std::nullopt;
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
