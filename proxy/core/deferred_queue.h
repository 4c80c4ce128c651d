#pragma once
// Work postponed to the end of the current loop iteration (an ev_prepare runs after every
// callback of the iteration): flushing gathered output once, and finishing objects outside
// their own callbacks. One queue per loop, shared by everything on it (client connections,
// upstream connections, pools): work one item queues for another runs in the same pass, never
// after an unrelated wakeup, and while work is left over the loop does not sleep.
#include <ev.h>
#include <vector>

namespace portico::core {

class Deferred {
public:
  virtual ~Deferred() = default;
  virtual void run_deferred() = 0;

private:
  friend class DeferredQueue;
  bool queued_ = false;
};

class DeferredQueue {
public:
  explicit DeferredQueue(struct ev_loop* loop);
  ~DeferredQueue();
  DeferredQueue(const DeferredQueue&) = delete;
  DeferredQueue& operator=(const DeferredQueue&) = delete;

  void add(Deferred* d);
  // Must be called before a queued object is destroyed.
  void cancel(Deferred* d);
  // Runs what is queued now (the owner's teardown; the loop does this by itself).
  void run();

private:
  static void prepare_cb(struct ev_loop* loop, ev_prepare* w, int revents);
  static void idle_cb(struct ev_loop*, ev_idle*, int) {}

  struct ev_loop* loop_;
  ev_prepare prepare_;
  ev_idle idle_; // active while work is left over after a pass: the loop must not block
  std::vector<Deferred*> items_;
  std::vector<Deferred*> running_;
};

} // namespace portico::core
