// portico: reverse proxy and HTTP/2 terminator. See README.md for the configuration.
#include "config/config_dump.h"
#include "config/config_loader.h"
#include "core/allocator_tuning.h"
#include "core/error_log.h"
#include "filters/registry.h"
#include "portico/binary_upgrade.h"
#include "portico/command_line.h"
#include "portico/config_generation.h"
#include "portico/convert_command.h"
#include "portico/listener_sockets.h"
#include "portico/log_file.h"
#include "portico/pid_file.h"
#include "portico/supervisor.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits.h>
#include <string_view>
#include <sys/resource.h>
#include <unistd.h>

namespace {

// [log] file, or stderr; under systemd (JOURNAL_STREAM) lines carry sd-daemon priorities.
bool open_error_log(const portico::config::Config& cfg, bool journal) {
  int fd = 2;
  if (!cfg.log.file.empty()) {
    fd = portico::proxy::open_log_file(cfg.log.file);
    if (fd < 0) {
      std::fprintf(stderr, "portico: error log %s: %s\n", cfg.log.file.c_str(),
                   std::strerror(errno));
      return false;
    }
  }
  portico::core::log::configure(cfg.log.level, fd, journal);
  return true;
}

int send_signal(const std::string& pid_file, const std::string& name) {
  auto sent = portico::proxy::signal_pid_file(pid_file, portico::proxy::signal_for(name));
  if (!sent) {
    std::fprintf(stderr, "portico: %s\n", sent.error().c_str());
    return 1;
  }
  return 0;
}

// Like HAProxy's maxconn from ulimit -n: by default as many client connections as the
// open-file limit leaves room for, each with an upstream connection, after the descriptors
// the process needs itself (listeners, loops, logs, the admin endpoint's 32). At that limit
// accepting pauses; running out of descriptors is left to the rare burst of idle upstreams.
int connections_from_fd_limit(int workers, size_t listeners) {
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) != 0 || nofile.rlim_cur == RLIM_INFINITY)
    return 0;
  long own = 16 + 32 + static_cast<long>(workers) * (3 + 2 * static_cast<long>(listeners));
  long room = (static_cast<long>(nofile.rlim_cur) - own) / 2;
  int derived = static_cast<int>(std::clamp(room, 1L, 10000000L));
  std::fprintf(stderr,
               "portico: max_connections %d (from the open-file limit %llu; [server] "
               "max_connections sets it)\n",
               derived, static_cast<unsigned long long>(nofile.rlim_cur));
  return derived;
}

// argv as given, argv[0] made absolute when it names a path: USR2 starts whatever file is
// there then (the new binary), from wherever the process has changed directory to.
std::vector<std::string> command_for_upgrade(int argc, char** argv) {
  std::vector<std::string> out(argv, argv + argc);
  if (!out.empty() && out[0].find('/') != std::string::npos && out[0][0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd))
      out[0] = std::string(cwd) + "/" + out[0];
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  using namespace portico;
  portico::core::tune_allocator();
  if (argc >= 2 && std::string_view(argv[1]) == "convert-nginx")
    return proxy::convert_nginx_command(argc - 1, argv + 1);
  int exit_code = 0;
  auto cl = proxy::parse_command_line(argc, argv, &exit_code);
  if (!cl)
    return exit_code;
  const std::string& config_path = cl->config_path;
  if (!cl->signal.empty() && !cl->pid_file.empty())
    return send_signal(cl->pid_file, cl->signal);
  // Blocked before anything is bound (a signal sent as soon as the port answers must not find
  // the default action) and before any thread starts, so that every thread inherits the mask
  // and the signals reach the supervisor's loop only. SIGCHLD: the USR2 upgrade's child.
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD})
    sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  std::vector<std::string> errors;
  auto cfg = config::load_config(config_path, &errors, filters::route_settings());
  // -t and -T end as nginx -t does: a last line that says the verdict.
  auto test_failed = [&] {
    if (cl->test_only || cl->dump_config)
      std::fprintf(stderr, "portico: configuration %s test failed\n", config_path.c_str());
    return 1;
  };
  if (!cfg) {
    for (const auto& e : errors)
      std::fprintf(stderr, "%s\n", e.c_str());
    return test_failed();
  }
  for (const auto& w : cfg->warnings)
    std::fprintf(stderr, "%s\n", w.c_str());
  if (!cl->signal.empty()) {
    if (cfg->server.pid_file.empty()) {
      std::fprintf(stderr, "portico: -s needs a pid file: [server] pid_file in %s, or --pid-file\n",
                   config_path.c_str());
      return 1;
    }
    return send_signal(cfg->server.pid_file, cl->signal);
  }
  bool journal = std::getenv("JOURNAL_STREAM") != nullptr;
  bool serving = !cl->test_only && !cl->dump_config;
  if (serving && !open_error_log(*cfg, journal))
    return 1;
  int workers = cfg->server.workers > 0 ? cfg->server.workers
                                        : std::max(1, int(sysconf(_SC_NPROCESSORS_ONLN)));
  int derived_max_connections = 0;
  // -T shows the limit a start here would compute (from this shell's descriptor limit).
  if ((serving || cl->dump_config) && cfg->server.max_connections == 0) {
    derived_max_connections = connections_from_fd_limit(workers, cfg->listeners.size());
    cfg->server.max_connections = derived_max_connections;
  }
  // TLS contexts are made before anything starts, so a bad certificate fails -t as well.
  auto shared = std::make_shared<const config::Config>(std::move(*cfg));
  auto first = proxy::ConfigGeneration::prepare(shared, 1);
  if (!first) {
    std::fprintf(stderr, "%s\n", first.error().c_str());
    return test_failed();
  }
  if (cl->dump_config) {
    std::fputs(config::dump_config(*shared).c_str(), stdout);
    return 0;
  }
  if (cl->test_only) {
    std::printf("portico: configuration %s is valid\n", config_path.c_str());
    return 0;
  }

  std::signal(SIGPIPE, SIG_IGN);
  auto sockets = std::make_unique<proxy::ListenerSockets>();
  auto bound = sockets->inherit_from_environment();
  if (bound)
    bound = sockets->open_for(*shared, workers);
  if (!bound) {
    std::fprintf(stderr, "portico: %s\n", bound.error().c_str());
    return 1;
  }
  // The pid file once the sockets are ours, as nginx writes it: a start that fails (a second
  // instance of the same configuration) must not take the running one's file, or `portico -s`
  // and logrotate lose it. No request is answered before the workers start, below.
  const std::string pid_file = shared->server.pid_file;
  if (!pid_file.empty())
    if (auto written = proxy::write_pid_file(pid_file); !written) {
      std::fprintf(stderr, "portico: %s\n", written.error().c_str());
      return 1;
    }

  int code;
  {
    proxy::Supervisor::Startup startup;
    startup.first = std::move(*first);
    startup.sockets = std::move(sockets);
    startup.workers = workers;
    startup.argv = command_for_upgrade(argc, argv);
    startup.journal = journal;
    startup.derived_max_connections = derived_max_connections;
    proxy::Supervisor supervisor(std::move(startup));
    code = supervisor.run();
  } // the sockets close here; unix socket files are removed unless handed over
  if (!pid_file.empty())
    proxy::remove_pid_file_if_ours(pid_file);
  return code;
}
