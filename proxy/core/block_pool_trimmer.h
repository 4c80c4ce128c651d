#pragma once
// The timer that gives a thread's idle buffer blocks back (BlockPool::trim) every interval, on
// the loop of the thread that owns them. It does not keep the loop alive.
#include <ev.h>

namespace portico::core {

class BlockPoolTrimmer {
public:
  // Blocks a burst left are back with the allocator within two of these.
  static constexpr ev_tstamp kInterval = 10;

  explicit BlockPoolTrimmer(struct ev_loop* loop);
  ~BlockPoolTrimmer();
  BlockPoolTrimmer(const BlockPoolTrimmer&) = delete;
  BlockPoolTrimmer& operator=(const BlockPoolTrimmer&) = delete;

private:
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  struct ev_loop* loop_;
  ev_timer timer_;
};

} // namespace portico::core
