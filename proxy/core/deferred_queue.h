#pragma once
// Work postponed to the end of the current loop iteration (an ev_prepare runs after every
// callback of the iteration): flushing gathered output once, and finishing objects outside
// their own callbacks. One queue per loop.
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

private:
  static void prepare_cb(struct ev_loop* loop, ev_prepare* w, int revents);
  void run();

  struct ev_loop* loop_;
  ev_prepare prepare_;
  std::vector<Deferred*> items_;
  std::vector<Deferred*> running_;
};

} // namespace portico::core
