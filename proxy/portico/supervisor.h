#pragma once
// The main thread of portico once the configuration is loaded and the sockets are bound: it
// starts the worker threads, serves the admin endpoint on its own libev loop, and handles the
// signals (TERM/QUIT drain, INT stops, USR1 reopens the access logs; HUP and USR2 are refused
// for now).
#include "config/config.h"
#include "portico/admin_handler.h"
#include "portico/proxy_worker.h"
#include "server/acceptor.h"
#include "server/server_context.h"
#include "tls/tls_context.h"

#include <ev.h>
#include <memory>
#include <vector>

namespace portico::proxy {

class Supervisor {
public:
  // listens: per worker, its sockets; admin_fd: -1 when the admin endpoint is off; tls: each
  // listener's TLS context or null, whose ticket keys this thread rotates.
  Supervisor(const config::Config& cfg, std::vector<std::vector<ProxyWorker::Listen>> listens,
             int admin_fd, const std::vector<int>& access_log_fds,
             const std::vector<tls::TlsContext*>& tls);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Runs until every worker has finished; returns the exit code.
  int run();

private:
  static void signal_cb(struct ev_loop* loop, ev_signal* w, int revents);
  static void done_cb(struct ev_loop* loop, ev_async* w, int revents);
  static void grace_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void rotate_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void watchdog_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void on_signal(int sig);
  void on_worker_done();
  void reopen_logs();
  void reopen_error_log();
  // HUP: loads the file again and says what is wrong with it, or that it is valid.
  void check_configuration();

  const config::Config& cfg_;
  std::vector<int> access_log_fds_; // per listener, -1: none; owned by main
  struct ev_loop* loop_;
  std::vector<double> bounds_;
  std::vector<std::unique_ptr<ProxyWorker>> workers_;
  std::unique_ptr<AdminHandler> admin_;
  std::unique_ptr<server::ServerContext> admin_ctx_;
  std::unique_ptr<server::Acceptor> admin_acceptor_;
  ev_signal signals_[6];
  ev_async done_;
  ev_timer grace_;
  ev_timer watchdog_; // WatchdogSec=: WATCHDOG=1 while the workers turn

  struct Rotation {
    ev_timer timer;
    tls::TlsContext* ctx;
  };
  std::vector<std::unique_ptr<Rotation>> rotations_;
  bool draining_ = false;
};

} // namespace portico::proxy
