#pragma once
// One worker thread of portico: its own libev loop, its own accept sockets (SO_REUSEPORT for
// TCP), its own clusters and pools, its own server context. Nothing on the request path is
// shared with another worker; the main thread talks to it only through an ev_async.
#include "config/config.h"
#include "core/deferred_queue.h"
#include "metrics/access_log.h"
#include "metrics/worker_metrics.h"
#include "server/acceptor.h"
#include "server/server_context.h"
#include "upstream/dns_resolver.h"
#include "upstream/router.h"

#include <atomic>
#include <ev.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace portico::proxy {

class ProxyWorker {
public:
  struct Listen {
    int fd;
    SSL_CTX* tls;      // null for cleartext
    uint16_t listener; // index in the configuration
  };
  // bounds: the histograms' bucket bounds, shared by every worker. done: sent (from the worker
  // thread) when its loop has ended.
  // access_log_fds: per configured listener, its log file or -1.
  ProxyWorker(const config::Config& cfg, int index, int count, std::vector<Listen> listens,
              const std::vector<double>* bounds, const std::vector<int>& access_log_fds,
              struct ev_loop* main_loop, ev_async* done);
  ~ProxyWorker();
  ProxyWorker(const ProxyWorker&) = delete;
  ProxyWorker& operator=(const ProxyWorker&) = delete;

  // Before start(): the worker's loop stamps heartbeat() this often, so that the supervisor
  // feeds systemd's watchdog only while every worker's loop turns.
  void enable_heartbeat(double every);
  double heartbeat() const { return heartbeat_.load(std::memory_order_relaxed); }
  void start();
  // From any thread: stop accepting, finish in-flight exchanges (GOAWAY, Connection: close).
  void drain();
  // From any thread: close everything now and end the loop.
  void stop();
  void join();
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // For the admin thread: read with relaxed loads, never written from there.
  const metrics::WorkerMetrics& metrics() const { return *metrics_; }
  const server::ServerStats& server_stats() const { return ctx_->stats(); }

private:
  static void async_cb(struct ev_loop* loop, ev_async* w, int revents);
  static void heartbeat_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void on_async();
  void run();

  struct ev_loop* loop_;
  std::unique_ptr<metrics::WorkerMetrics> metrics_;
  std::unique_ptr<core::DeferredQueue> deferred_;
  std::unique_ptr<upstream::DnsResolver> resolver_;
  std::vector<std::unique_ptr<metrics::AccessLog>> access_logs_; // by listener; null: off
  std::unique_ptr<upstream::Router> router_;
  std::unique_ptr<server::ServerContext> ctx_;
  std::vector<Listen> listens_;
  std::vector<std::unique_ptr<server::Acceptor>> acceptors_;
  ev_async async_;
  std::atomic<int> command_{0}; // 1 drain, 2 stop
  std::atomic<bool> finished_{false};
  std::atomic<double> heartbeat_{0}; // ev_now() of the last beat
  ev_timer heartbeat_timer_;
  bool draining_ = false;
  struct ev_loop* main_loop_;
  ev_async* done_;
  std::string name_; // "worker N" in the error log
  std::thread thread_;
};

} // namespace portico::proxy
