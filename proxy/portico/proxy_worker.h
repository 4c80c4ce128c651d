#pragma once
// One worker thread of portico: its own libev loop, its own accept sockets (SO_REUSEPORT for
// TCP), its own clusters and pools, its own server context. Nothing on the request path is
// shared with another worker; the main thread talks to it only through an ev_async and a
// mutex-guarded mailbox that the request path never touches.
//
// What it serves comes in generations (worker_generation.h): one at start, one more per
// reload. The newest gets every request; the older ones go once nothing uses them. The server
// context and its connections stay across reloads.
#include "core/deferred_queue.h"
#include "metrics/server_stats.h"
#include "metrics/worker_metrics.h"
#include "portico/cache_purge.h"
#include "portico/worker_generation.h"
#include "quic/quic_endpoint.h"
#include "server/acceptor.h"
#include "server/server_context.h"
#include "upstream/dns_resolver.h"

#include <atomic>
#include <cstdint>
#include <ev.h>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace portico::proxy {

class ProxyWorker {
public:
  // first: the generation it starts with. done: sent (from the worker thread) when a
  // generation was applied or retired, and when its loop has ended.
  ProxyWorker(int index, int count, GenerationSpec first, struct ev_loop* main_loop,
              ev_async* done);
  ~ProxyWorker();
  ProxyWorker(const ProxyWorker&) = delete;
  ProxyWorker& operator=(const ProxyWorker&) = delete;

  // Before start(): the worker's loop stamps heartbeat() this often, so that the supervisor
  // feeds systemd's watchdog only while every worker's loop turns.
  void enable_heartbeat(double every);
  double heartbeat() const { return heartbeat_.load(std::memory_order_relaxed); }
  void start();
  // From the main thread: new connections go to spec's generation from the worker's next
  // loop pass on; the one before drains. Its metrics are what metrics() shows from now on.
  void reload(GenerationSpec spec);
  // From the main thread: the generations applied and retired since the last call.
  struct Progress {
    std::vector<uint64_t> applied, retired;
  };
  Progress take_progress();
  // From any thread: stop accepting, finish in-flight exchanges (GOAWAY, Connection: close).
  void drain();
  // From any thread, after drain: long-lived exchanges say goodbye (ServerContext::goodbye).
  void goodbye();
  // From the admin thread: the caches drop what job asks, on this worker's loop; the last
  // worker to finish wakes the admin loop (cache_purge.h).
  void purge(std::shared_ptr<PurgeJob> job);
  // From any thread: each connection's last words and a lingering close (at most
  // kStopLinger), then the loop ends.
  void stop();
  void join();
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // For the admin thread: read with relaxed loads, never written from there. The metrics are
  // the newest generation's.
  const metrics::WorkerMetrics& metrics() const { return *metrics_; }
  const server::ServerStats& server_stats() const { return stats_; }

private:
  static void async_cb(struct ev_loop* loop, ev_async* w, int revents);
  static void heartbeat_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void retire_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void stop_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void on_async();
  void apply(GenerationSpec spec);
  void start_accepting(const GenerationSpec& spec);
  // Frees the old generations nothing uses any more.
  void retire_unused();
  void report();
  void run();
  // Destroys what the worker made (acceptors, connections, generations, resolver, deferred
  // queue): at the end of run(), on the worker's thread, or in the destructor if it never ran.
  void tear_down();

  struct ev_loop* loop_;
  server::ServerStats stats_;
  std::shared_ptr<metrics::WorkerMetrics> metrics_; // main thread's view
  std::unique_ptr<core::DeferredQueue> deferred_;
  std::unique_ptr<upstream::DnsResolver> resolver_;
  WorkerServices services_;
  std::vector<std::unique_ptr<WorkerGeneration>> live_; // the newest last
  std::unique_ptr<server::ServerContext> ctx_;
  std::vector<std::unique_ptr<server::Acceptor>> acceptors_;
  std::vector<std::unique_ptr<quic::QuicEndpoint>> quic_; // one per QUIC listener socket
  ev_timer retire_;     // while old generations are left: looks whether they are unused
  ev_timer stop_timer_; // a stop's lingering closes: how long the loop waits for them at most
  bool stopping_ = false;
  ev_async async_;
  std::atomic<int> command_{0}; // 1 drain, 2 stop
  std::atomic<bool> goodbye_{false};
  std::atomic<bool> finished_{false};
  bool torn_down_ = false;
  std::atomic<double> heartbeat_{0}; // ev_now() of the last beat
  ev_timer heartbeat_timer_;
  bool draining_ = false;

  std::mutex mailbox_mu_; // the main thread and this worker, never the request path
  std::vector<GenerationSpec> pending_;
  std::vector<std::shared_ptr<PurgeJob>> purges_;
  Progress progress_;

  struct ev_loop* main_loop_;
  ev_async* done_;
  std::string name_; // "worker N" in the error log
  std::thread thread_;
};

} // namespace portico::proxy
