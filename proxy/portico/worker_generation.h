#pragma once
// What one worker runs for one loaded configuration: its router and clusters, its access logs
// and metrics shard. A reload gives every worker a new generation, as Envoy applies a new
// route table: from the worker's next loop pass on, every request (on new connections and on
// those already open) goes to the new router, while the exchanges under way finish on the
// old one. The old generation is freed once no exchange uses its router and no connection
// accepted while it was current (with its TLS certificate) is left. A cluster whose
// configuration did not change moves over with its pools and its metrics, so a reload opens
// no upstream connection it does not need.
#include "config/config.h"
#include "core/deferred_queue.h"
#include "metrics/access_log.h"
#include "metrics/worker_metrics.h"
#include "quic/connection_ids.h"
#include "quic/quic_tls_context.h"
#include "routing/router.h"
#include "server/server_context.h"
#include "upstream/dns_resolver.h"

#include <cstdint>
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

// One UDP socket a worker reads a QUIC listener's datagrams from. Its endpoint outlives
// generations (the socket does): a reload hands it new settings for new connections.
struct QuicListen {
  int fd;
  std::shared_ptr<const quic::QuicTlsContext> tls;
  uint16_t listener;
};

// What the supervisor hands a worker for a generation. Everything in it outlives the
// generation: the supervisor frees the sockets, log files and TLS contexts only once every
// worker has said the generation is gone.
struct GenerationSpec {
  uint64_t id = 0;
  std::shared_ptr<const config::Config> cfg;
  std::shared_ptr<metrics::WorkerMetrics> metrics;
  std::vector<Listen> listens;
  std::vector<QuicListen> quic_listens;
  std::shared_ptr<const quic::QuicSecret> quic_secret; // the process's, the same every generation
  std::vector<int> access_log_fds;                     // per listener, -1: none
  std::vector<SSL_CTX*> cluster_tls;                   // per cluster, null: cleartext
};

// What a generation borrows from its worker, which outlives every generation.
struct WorkerServices {
  struct ev_loop* loop;
  core::DeferredQueue& deferred;
  upstream::DnsResolver& resolver;
  int index; // this worker, of count: its share of the limits
  int count;
};

// The server side's limits for cfg, as one worker's share of count.
server::ServerLimits limits_for(const config::Config& cfg, int count);

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
  const GenerationSpec& spec() const { return spec_; }
  routing::Router& router() { return *router_; }
  // The context's epoch in which this generation accepted (its connections hold its TLS).
  uint32_t epoch = 0;
  // Nothing uses it any more: no exchange its router started, no connection it accepted.
  bool unused(const server::ServerContext& ctx) const {
    return router_->in_flight() == 0 && ctx.open_from_epoch(epoch) == 0;
  }

private:
  GenerationSpec spec_;
  std::vector<std::unique_ptr<metrics::AccessLog>> access_logs_; // by listener; null: off
  std::unique_ptr<routing::Router> router_;
};

} // namespace portico::proxy
