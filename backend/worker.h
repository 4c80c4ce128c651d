#pragma once
// One portico-backend worker process: a libev loop serving the listening sockets it inherited
// from the master, until it retires (--max-requests), is told to stop (TERM), or is killed.
#include "listen_sockets.h"
#include "options.h"

#include <memory>
#include <vector>

namespace portico::server {
class AcceptShare;
}

namespace portico::backend {

class ShmCounterTable;
class WorkerSlot;

// Exit codes the master reads.
inline constexpr int kWorkerExitRetired = 0; // max-requests reached or TERM: respawn at once
inline constexpr int kWorkerExitStartup = 3; // could not start: respawn with backoff

// Runs in the child after fork; returns the exit code. metrics: this worker's slot in the
// master's metrics table (--admin), or null. share: its place among the workers' connection
// counts (accept_balance.h), or null.
int run_worker(const Options& opts, const std::vector<ListenSocket>& sockets, ShmCounterTable* shm,
               WorkerSlot* metrics, std::unique_ptr<server::AcceptShare> share);

} // namespace portico::backend
