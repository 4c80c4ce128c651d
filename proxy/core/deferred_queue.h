#pragma once
// Work postponed to the end of the current loop iteration (an ev_prepare runs after every
// callback of the iteration): flushing gathered output once, and destroying objects outside
// their own callbacks. One queue per loop, shared by everything on it (client connections,
// upstream connections, pools, exchanges): work one item queues for another runs in the same
// pass, never after an unrelated wakeup, and while work is left over the loop does not sleep.
//
// Destruction goes through dispose() (Envoy's deferredDelete): an object finished inside a
// callback of its own, or of something it calls, stays valid until every frame up the stack
// has returned, so no caller needs to know whether the call it made deleted anything.
#include <ev.h>
#include <vector>

namespace portico::core {

// What dispose() can destroy.
class Disposable {
public:
  virtual ~Disposable() = default;
};

class Deferred : public Disposable {
public:
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
  // Deletes d after this pass's work, in the order given (an owner disposed after what it
  // owns outlives it). Queued work of d is cancelled.
  void dispose(Disposable* d);
  void dispose(Deferred* d) {
    cancel(d);
    dispose(static_cast<Disposable*>(d));
  }
  // Runs what is queued now and destroys what was disposed (an owner's teardown; the loop
  // does this by itself).
  void run();
  // The loop's queue (the first made on it, while it lives), for objects that own themselves
  // and know only their loop (a backend app): ev_userdata holds it.
  static DeferredQueue* of(struct ev_loop* loop) {
    return static_cast<DeferredQueue*>(ev_userdata(loop));
  }

private:
  static void prepare_cb(struct ev_loop* loop, ev_prepare* w, int revents);
  static void idle_cb(struct ev_loop*, ev_idle*, int) {}

  struct ev_loop* loop_;
  ev_prepare prepare_;
  ev_idle idle_; // active while work is left over after a pass: the loop must not block
  std::vector<Deferred*> items_;
  std::vector<Deferred*> running_;
  std::vector<Disposable*> disposed_;
  std::vector<Disposable*> deleting_;
};

} // namespace portico::core
