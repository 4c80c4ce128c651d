#pragma once
// SIGUSR2: the running process starts the program file again (the new binary an operator
// installed), handing it the listening sockets, as nginx and HAProxy do. The new process
// serves as soon as it is up and says so through a pipe; only then does the old one stop
// accepting and drain. If the new one exits, fails or is not ready within a minute, the old
// one goes on serving as if nothing had happened.
#include "core/expected.h"

#include <ev.h>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace portico::proxy {

class BinaryUpgrade {
public:
  // on_outcome: once per start(), with the new pid when it is ready, or -1 and the reason.
  using Outcome = std::function<void(pid_t pid, const std::string& why)>;
  BinaryUpgrade(struct ev_loop* loop, Outcome on_outcome);
  ~BinaryUpgrade();
  BinaryUpgrade(const BinaryUpgrade&) = delete;
  BinaryUpgrade& operator=(const BinaryUpgrade&) = delete;

  // argv: the command line this process was started with, argv[0] as found then. inherit:
  // the descriptors the new process gets, named in listen_env ($PORTICO_LISTEN_FDS).
  core::expected<void, std::string> start(const std::vector<std::string>& argv,
                                          const std::vector<int>& inherit,
                                          const std::string& listen_env);
  bool in_progress() const { return pid_ > 0; }

private:
  static void ready_cb(struct ev_loop* loop, ev_io* w, int revents);
  static void child_cb(struct ev_loop* loop, ev_child* w, int revents);
  static void timeout_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void finish(pid_t pid, const std::string& why);

  struct ev_loop* loop_;
  Outcome on_outcome_;
  pid_t pid_ = -1;
  int ready_fd_ = -1;
  ev_io ready_;
  ev_child child_;
  ev_timer timeout_;
};

// In the new process: whether an old one started it, and telling it this one serves.
bool started_by_upgrade();
void announce_upgrade_ready();

} // namespace portico::proxy
