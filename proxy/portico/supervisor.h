#pragma once
// The main thread of portico once the configuration is loaded and the sockets are bound: it
// starts the worker threads, serves the admin endpoint on its own libev loop, and handles the
// signals, as nginx's master does:
//   TERM, QUIT  drain: finish in-flight requests within grace_period, then exit
//   INT         stop now
//   HUP         reload: load the file again; if it is valid every worker switches to it
//               (generations, worker_generation.h), else the errors are logged and the
//               running configuration stays
//   USR1        reopen the access logs and the error log (after logrotate's rename)
//   USR2        binary upgrade (binary_upgrade.h): start the program file again with the
//               sockets, and drain once it serves
#include "config/config.h"
#include "portico/admin_handler.h"
#include "portico/binary_upgrade.h"
#include "portico/config_generation.h"
#include "portico/listener_sockets.h"
#include "portico/proxy_worker.h"
#include "server/acceptor.h"
#include "server/server_context.h"

#include <ev.h>
#include <memory>
#include <string>
#include <vector>

namespace portico::proxy {

class Supervisor {
public:
  struct Startup {
    std::unique_ptr<ConfigGeneration> first;
    std::unique_ptr<ListenerSockets> sockets; // holding the sockets first needs
    int workers = 1;
    std::vector<std::string> argv;   // how this process was started, for USR2
    bool journal = false;            // the error log goes to journald (sd-daemon prefixes)
    int derived_max_connections = 0; // from the open-file limit, for a file that sets none
  };
  explicit Supervisor(Startup startup);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Runs until every worker has finished; returns the exit code.
  int run();
  // Whether a new process took the sockets over (USR2): its pid file and unix socket files
  // are its own now.
  bool handed_over() const { return handed_over_; }

private:
  static void signal_cb(struct ev_loop* loop, ev_signal* w, int revents);
  static void done_cb(struct ev_loop* loop, ev_async* w, int revents);
  static void grace_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void goodbye_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void rotate_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void watchdog_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void on_signal(int sig);
  void on_worker_progress();
  void reopen_logs();
  void reopen_error_log();
  void give_back_freed_memory();
  // HUP: the new generation handed to every worker, or what is wrong.
  void reload();
  core::expected<void, std::string> start_generation();
  GenerationSpec spec_for(const ConfigGeneration& g, int worker,
                          const metrics::WorkerMetrics* previous) const;
  void start_rotations(const ConfigGeneration& g);
  void upgrade();
  void on_upgrade_outcome(pid_t pid, const std::string& why);
  void begin_drain(const char* why);
  ConfigGeneration& current() const { return *generations_.back(); }

  struct ev_loop* loop_;
  int worker_count_;
  // Behind every QUIC listener's stateless resets and Retry tokens: one for the process, so
  // that a token made before a reload still checks after it.
  std::shared_ptr<const quic::QuicSecret> quic_secret_ = std::make_shared<quic::QuicSecret>();
  std::vector<std::string> argv_;
  bool journal_;
  int derived_max_connections_;
  std::vector<double> bounds_; // the histograms' bounds, fixed for the process's life
  std::unique_ptr<ListenerSockets> sockets_;
  std::vector<std::unique_ptr<ConfigGeneration>> generations_; // live ones, the newest last
  uint64_t next_id_ = 1;
  std::vector<std::unique_ptr<ProxyWorker>> workers_;
  std::unique_ptr<AdminHandler> admin_;
  std::unique_ptr<server::ServerContext> admin_ctx_;
  std::unique_ptr<server::Acceptor> admin_acceptor_;
  // [admin] control_socket: the same handler, connections of its own (scrapes filling the
  // address's 32 cannot lock an operator out).
  std::unique_ptr<server::ServerContext> control_ctx_;
  std::unique_ptr<server::Acceptor> control_acceptor_;
  ev_signal signals_[6];
  ev_async done_;
  ev_timer grace_;
  ev_timer goodbye_;  // [server] long_lived_drain after the drain began
  ev_timer watchdog_; // WatchdogSec=: WATCHDOG=1 while the workers turn

  struct Rotation {
    ev_timer timer;
    tls::TlsContext* ctx;
  };
  std::vector<std::unique_ptr<Rotation>> rotations_; // the current generation's contexts
  BinaryUpgrade upgrade_;
  bool upgrade_child_; // an old process started this one (USR2): it tells systemd
  bool draining_ = false;
  bool handed_over_ = false;
};

} // namespace portico::proxy
