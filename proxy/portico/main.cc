// portico: reverse proxy and HTTP/2 terminator. See README.md for the configuration.
#include "config/config_dump.h"
#include "config/config_loader.h"
#include "core/allocator_tuning.h"
#include "core/error_log.h"
#include "portico/command_line.h"
#include "portico/log_file.h"
#include "portico/pid_file.h"
#include "portico/supervisor.h"
#include "tls/tls_context.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>
#include <sys/resource.h>
#include <unistd.h>

namespace {

// [log] file, or stderr; under systemd (JOURNAL_STREAM) lines carry sd-daemon priorities.
bool open_error_log(const portico::config::Config& cfg) {
  int fd = 2;
  if (!cfg.log.file.empty()) {
    fd = portico::proxy::open_log_file(cfg.log.file);
    if (fd < 0) {
      std::fprintf(stderr, "portico: error log %s: %s\n", cfg.log.file.c_str(),
                   std::strerror(errno));
      return false;
    }
  }
  portico::core::log::configure(cfg.log.level, fd, std::getenv("JOURNAL_STREAM") != nullptr);
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

} // namespace

int main(int argc, char** argv) {
  using namespace portico;
  portico::core::tune_allocator();
  int exit_code = 0;
  auto cl = proxy::parse_command_line(argc, argv, &exit_code);
  if (!cl)
    return exit_code;
  const std::string& config_path = cl->config_path;
  if (!cl->signal.empty() && !cl->pid_file.empty())
    return send_signal(cl->pid_file, cl->signal);
  std::vector<std::string> errors;
  auto cfg = config::load_config(config_path, &errors);
  if (!cfg) {
    for (const auto& e : errors)
      std::fprintf(stderr, "%s\n", e.c_str());
    return 1;
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
  if (!cl->test_only && !cl->dump_config && !open_error_log(*cfg))
    return 1;
  // TLS contexts are made before anything starts, so a bad certificate fails -t as well.
  std::vector<std::unique_ptr<tls::TlsContext>> tls_contexts(cfg->listeners.size());
  for (size_t i = 0; i < cfg->listeners.size(); ++i) {
    if (!cfg->listeners[i].tls_enabled)
      continue;
    auto made = tls::TlsContext::create(cfg->listeners[i].tls);
    if (!made) {
      std::fprintf(stderr, "%s: listener %s: %s\n", config_path.c_str(),
                   cfg->listeners[i].address.text.c_str(), made.error().c_str());
      return 1;
    }
    tls_contexts[i] = std::move(*made);
  }
  if (cl->dump_config) {
    std::fputs(config::dump_config(*cfg).c_str(), stdout);
    return 0;
  }
  if (cl->test_only) {
    std::printf("portico: configuration %s is valid\n", config_path.c_str());
    return 0;
  }

  std::signal(SIGPIPE, SIG_IGN);

  int workers = cfg->server.workers > 0 ? cfg->server.workers
                                        : std::max(1, int(sysconf(_SC_NPROCESSORS_ONLN)));
  // Like HAProxy's maxconn from ulimit -n: by default as many client connections as the
  // open-file limit leaves room for, each with an upstream connection, after the descriptors
  // the process needs itself (listeners, loops, logs, the admin endpoint's 32). At that limit
  // accepting pauses; running out of descriptors is left to the rare burst of idle upstreams.
  if (cfg->server.max_connections == 0) {
    rlimit nofile{};
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
      long own =
          16 + 32 + static_cast<long>(workers) * (3 + 2 * static_cast<long>(cfg->listeners.size()));
      long room = (static_cast<long>(nofile.rlim_cur) - own) / 2;
      cfg->server.max_connections = static_cast<int>(std::clamp(room, 1L, 10000000L));
      std::fprintf(stderr,
                   "portico: max_connections %d (from the open-file limit %llu; [server] "
                   "max_connections sets it)\n",
                   cfg->server.max_connections, static_cast<unsigned long long>(nofile.rlim_cur));
    }
  }
  // TCP listeners get a socket per worker (SO_REUSEPORT: the kernel spreads connections);
  // a unix socket is shared, each worker accepting through EPOLLEXCLUSIVE.
  std::vector<std::vector<proxy::ProxyWorker::Listen>> fds(workers);
  std::vector<std::string> unix_paths;
  for (size_t li = 0; li < cfg->listeners.size(); ++li) {
    const auto& l = cfg->listeners[li];
    SSL_CTX* tls = tls_contexts[li] ? tls_contexts[li]->get() : nullptr;
    bool tcp = l.address.kind == core::ListenAddress::Kind::TCP;
    int shared = -1;
    for (int w = 0; w < workers; ++w) {
      int fd = shared;
      if (tcp || shared < 0) {
        auto opened = core::open_listener(l.address, 4096, tcp);
        if (!opened) {
          std::fprintf(stderr, "portico: %s\n", opened.error().c_str());
          return 1;
        }
        fd = *opened;
      }
      if (!tcp)
        shared = fd;
      fds[w].push_back({fd, tls, static_cast<uint16_t>(li)});
    }
    if (!tcp)
      unix_paths.push_back(l.address.path);
    core::log::write(core::log::Level::INFO, core::log::Kind::GENERAL, "listening on %s",
                     l.address.text.c_str());
  }

  // Access logs are opened here, once, and shared by the workers (O_APPEND, whole lines).
  std::vector<int> access_log_fds;
  for (const auto& l : cfg->listeners) {
    int fd = -1;
    if (!l.access_log.empty()) {
      fd = proxy::open_log_file(l.access_log);
      if (fd < 0) {
        std::fprintf(stderr, "portico: access log %s: %s\n", l.access_log.c_str(),
                     std::strerror(errno));
        return 1;
      }
    }
    access_log_fds.push_back(fd);
  }

  int admin_fd = -1;
  if (cfg->admin.enabled) {
    auto opened = core::open_listener(cfg->admin.address, 128, false);
    if (!opened) {
      std::fprintf(stderr, "portico: admin: %s\n", opened.error().c_str());
      return 1;
    }
    admin_fd = *opened;
    core::log::write(core::log::Level::INFO, core::log::Kind::GENERAL, "admin on %s",
                     cfg->admin.address.text.c_str());
  }

  if (!cfg->server.pid_file.empty()) {
    if (auto written = proxy::write_pid_file(cfg->server.pid_file); !written) {
      std::fprintf(stderr, "portico: %s\n", written.error().c_str());
      return 1;
    }
  }

  // Blocked before any thread starts, so that every thread inherits the mask and the signals
  // reach the supervisor's loop only.
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2})
    sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  int code;
  {
    std::vector<std::vector<proxy::ProxyWorker::Listen>> per_worker = fds;
    std::vector<tls::TlsContext*> tls;
    for (auto& t : tls_contexts)
      tls.push_back(t.get());
    proxy::Supervisor supervisor(*cfg, std::move(per_worker), admin_fd, access_log_fds, tls);
    code = supervisor.run();
  }
  std::set<int> open_fds; // a unix socket is shared by the workers: close it once
  for (auto& list : fds)
    for (const auto& l : list)
      open_fds.insert(l.fd);
  for (int fd : open_fds)
    ::close(fd);
  if (admin_fd >= 0)
    ::close(admin_fd);
  for (int fd : access_log_fds)
    if (fd >= 0)
      ::close(fd);
  for (const auto& p : unix_paths)
    ::unlink(p.c_str());
  if (!cfg->server.pid_file.empty())
    ::unlink(cfg->server.pid_file.c_str());
  return code;
}
