#include "portico/command_line.h"

#include "core/build_info.h"

#include <ares.h>
#include <csignal>
#include <cstdio>
#include <getopt.h>
#include <toml++/toml.h>

#ifndef PROMETHEUS_CPP_VERSION
#define PROMETHEUS_CPP_VERSION "unknown"
#endif

namespace portico::proxy {

namespace {

constexpr const char* kUsage = R"(usage: portico -c FILE [-t | -T]
       portico convert-nginx FILE   an nginx configuration as Portico's, on stdout
  -c, --config FILE   configuration (TOML)
  -t, --test          check the configuration and exit: 0 when valid, 1 with every error as
                      FILE:LINE:COL
  -T, --dump-config   check it and print it, every default filled in, as TOML
  -s, --signal NAME   tell the running portico: stop (now, INT), quit (gracefully, QUIT),
                      reopen (the logs, USR1), reload (the configuration, HUP), upgrade
                      (to the program file installed now, USR2); its pid is read from
                      --pid-file FILE, or from the configuration's [server] pid_file
  -v, --version       print the version
  -V, --build-info    print the version, build type, compiler and every library's version
  -h, --help          this text
Signals: TERM/QUIT graceful stop (GOAWAY, Connection: close, in-flight requests finish within
[server] grace_period), INT immediate stop, HUP reload the configuration (kept when it has
errors), USR1 reopen the logs (logrotate), USR2 binary upgrade (start the program again with
the listening sockets; this process drains once the new one serves).
)";

void print_build_info() {
  auto libs = core::core_components();
  libs.push_back({"c-ares", ares_version(nullptr)});
  libs.push_back({"toml++", std::to_string(TOML_LIB_MAJOR) + "." + std::to_string(TOML_LIB_MINOR) +
                                "." + std::to_string(TOML_LIB_PATCH)});
  libs.push_back({"prometheus-cpp", PROMETHEUS_CPP_VERSION " (as built)"});
  core::print_build_info(stdout, "portico", libs);
}

} // namespace

int signal_for(const std::string& name) {
  if (name == "stop")
    return SIGINT;
  if (name == "quit")
    return SIGQUIT;
  if (name == "reopen")
    return SIGUSR1;
  if (name == "reload")
    return SIGHUP;
  if (name == "upgrade")
    return SIGUSR2;
  return 0;
}

std::optional<CommandLine> parse_command_line(int argc, char** argv, int* exit_code) {
  static const option kLong[] = {{"config", required_argument, nullptr, 'c'},
                                 {"test", no_argument, nullptr, 't'},
                                 {"dump-config", no_argument, nullptr, 'T'},
                                 {"signal", required_argument, nullptr, 's'},
                                 {"pid-file", required_argument, nullptr, 'P'},
                                 {"version", no_argument, nullptr, 'v'},
                                 {"build-info", no_argument, nullptr, 'V'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  CommandLine cl;
  *exit_code = 2;
  optind = 1;
  for (int c; (c = getopt_long(argc, argv, "c:tTs:vVh", kLong, nullptr)) != -1;) {
    switch (c) {
    case 'c': cl.config_path = optarg; break;
    case 't': cl.test_only = true; break;
    case 'T': cl.dump_config = true; break;
    case 's':
      cl.signal = optarg;
      if (!signal_for(cl.signal)) {
        std::fprintf(stderr, "portico: -s %s: one of stop, quit, reopen, reload, upgrade\n",
                     optarg);
        return std::nullopt;
      }
      break;
    case 'P': cl.pid_file = optarg; break;
    case 'v':
      std::printf("portico %s\n", PORTICO_VERSION);
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
  }
  if (optind < argc) {
    std::fprintf(stderr, "portico: unexpected argument '%s'\n%s", argv[optind], kUsage);
    return std::nullopt;
  }
  if (cl.config_path.empty() && !(cl.signal.size() && cl.pid_file.size())) {
    std::fprintf(stderr, "portico: -c FILE is required\n%s", kUsage);
    return std::nullopt;
  }
  return cl;
}

} // namespace portico::proxy
