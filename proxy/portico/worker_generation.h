#pragma once
// What one worker runs for one loaded configuration: its router and clusters, its server
// context and acceptors, its access logs and metrics shard. A reload gives every worker a new
// generation: the new one starts accepting on the same sockets in the same loop pass as the
// old one stops, and the old one drains its connections (GOAWAY, "Connection: close") and is
// destroyed once the last is gone. A cluster whose configuration did not change moves over
// with its pools and its metrics, so a reload opens no upstream connection it does not need.
#include "config/config.h"
#include "core/deferred_queue.h"
#include "metrics/access_log.h"
#include "metrics/worker_metrics.h"
#include "server/acceptor.h"
#include "server/server_context.h"
#include "upstream/dns_resolver.h"
#include "upstream/router.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <openssl/ssl.h>
#include <vector>

namespace portico::proxy {

// One socket a worker accepts on.
struct Listen {
  int fd;
  SSL_CTX* tls;      // null for cleartext
  uint16_t listener; // index in the configuration
};

// What the supervisor hands a worker for a generation. Everything in it outlives the
// generation: the supervisor frees the sockets, log files and TLS contexts only once every
// worker has said the generation is gone.
struct GenerationSpec {
  uint64_t id = 0;
  std::shared_ptr<const config::Config> cfg;
  std::shared_ptr<metrics::WorkerMetrics> metrics;
  std::vector<Listen> listens;
  std::vector<int> access_log_fds; // per listener, -1: none
};

// What a generation borrows from its worker, which outlives every generation.
struct WorkerServices {
  struct ev_loop* loop;
  core::DeferredQueue& deferred;
  upstream::DnsResolver& resolver;
  server::ServerStats& stats; // one set of figures for all of the worker's generations
  int index;                  // this worker, of count: its share of the limits
  int count;
};

class WorkerGeneration {
public:
  // previous: the generation this one replaces, whose unchanged clusters it takes over; null
  // for the first.
  WorkerGeneration(const WorkerServices& services, GenerationSpec spec,
                   const WorkerGeneration* previous);
  ~WorkerGeneration();
  WorkerGeneration(const WorkerGeneration&) = delete;
  WorkerGeneration& operator=(const WorkerGeneration&) = delete;

  uint64_t id() const { return spec_.id; }
  void start_accepting();
  void stop_accepting();
  // Finishes the exchanges under way and closes the connections; on_drained runs once none is
  // left (perhaps at once), from inside a callback of the context: it must not destroy this.
  void drain(std::function<void()> on_drained);
  void close_all();
  server::ServerContext& context() { return *ctx_; }

private:
  GenerationSpec spec_;
  std::vector<std::unique_ptr<metrics::AccessLog>> access_logs_; // by listener; null: off
  std::unique_ptr<upstream::Router> router_;
  std::unique_ptr<server::ServerContext> ctx_;
  std::vector<std::unique_ptr<server::Acceptor>> acceptors_;
};

} // namespace portico::proxy
