#pragma once
// The portico-backend master: owns the listening sockets and the shared counter table, forks
// the workers and keeps their number right. Signals: HUP graceful restart (new workers first,
// then the old ones finish and exit), TERM/QUIT graceful stop, INT immediate stop,
// TTIN/TTOU one worker more/less. A crashed worker is respawned with backoff.
//
// With --admin, the master also owns the request metrics table (a slot per live worker, in
// shared memory made before fork) and serves /metrics and /healthz on its own libev loop,
// through the server core (master_admin.h).
#include "accept_balance.h"
#include "backend_metrics.h"
#include "listen_sockets.h"
#include "master_admin.h"
#include "master_dashboard.h"
#include "metrics_exposition.h"
#include "options.h"
#include "shm_counter_table.h"

#include <ev.h>
#include <map>
#include <memory>
#include <sys/types.h>
#include <vector>

namespace portico::backend {

class Master {
public:
  Master(Options opts, std::vector<ListenSocket> sockets);
  ~Master();
  // Runs until stopped; returns the process exit code.
  int run();

private:
  // Why the master asked a worker to stop, if it did.
  enum class StopReason {
    NONE,   // not asked: an exit is a crash or a retirement after --max-requests
    HUP,    // replaced by a graceful restart
    SHRINK, // TTOU: not replaced
    STOP,   // the master is stopping
  };
  struct WorkerInfo {
    unsigned generation;
    double started_at;
    int slot = -1;  // in metrics_, when --admin is on
    int place = -1; // in balance_
    StopReason stop = StopReason::NONE;
  };

  // Forks a worker of the current generation; false (logged) when fork fails or no metrics
  // slot is free, and then the caller retries later.
  bool spawn();
  void spawn_or_retry(double now);
  void count_exit(const WorkerInfo& info, int status);
  AdminResponse admin_response(std::string_view path, std::string_view query);
  SupervisionStats supervision_stats() const;
  void reap();
  void handle_signal(int sig);
  // Signals the workers (of older generations only, or all), noting why.
  void signal_workers(int sig, bool old_generations_only, StopReason why);
  void schedule_respawns(double now);
  double backoff_delay(double lived);
  void log(const char* fmt, ...) __attribute__((format(printf, 2, 3)));

  Options opts_;
  std::vector<ListenSocket> sockets_;
  std::unique_ptr<ShmCounterTable> shm_;
  std::unique_ptr<AcceptBalance> balance_;  // null when it could not be mapped
  std::unique_ptr<BackendMetrics> metrics_; // --admin only
  // The supervision loop: the signalfd, the admin endpoint, and a timer for the next deadline
  // (a respawn, the end of a graceful stop), run one turn at a time.
  struct ev_loop* loop_ = nullptr;
  ev_io signal_io_;
  ev_timer wake_;
  std::unique_ptr<MasterAdmin> admin_;
  std::unique_ptr<MasterDashboard> dashboard_; // with admin_
  SupervisionStats stats_;
  std::map<pid_t, WorkerInfo> workers_;
  std::vector<double> respawn_at_; // pending respawns, by due time
  unsigned generation_ = 0;
  int target_ = 1;
  int sigfd_ = -1;
  int consecutive_crashes_ = 0;
  bool stopping_ = false;
  double stop_deadline_ = 0;
};

} // namespace portico::backend
