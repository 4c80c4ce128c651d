#pragma once
// The portico-backend master: owns the listening sockets and the shared counter table, forks
// the workers and keeps their number right. Signals: HUP graceful restart (new workers first,
// then the old ones finish and exit), TERM/QUIT graceful stop, INT immediate stop,
// TTIN/TTOU one worker more/less. A crashed worker is respawned with backoff.
#include "listen_sockets.h"
#include "options.h"
#include "shm_counter_table.h"

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
  struct WorkerInfo {
    unsigned generation;
    double started_at;
  };

  bool spawn();
  void reap();
  void handle_signal(int sig);
  void signal_workers(int sig, bool old_generations_only);
  void schedule_respawns(double now);
  double backoff_delay(double lived);
  void log(const char* fmt, ...) __attribute__((format(printf, 2, 3)));

  Options opts_;
  std::vector<ListenSocket> sockets_;
  std::unique_ptr<ShmCounterTable> shm_;
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
