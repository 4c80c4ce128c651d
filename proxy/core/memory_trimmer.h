#pragma once
// The timer that gives a thread's idle memory back, on the loop of the thread that owns it:
// every interval, the buffer blocks (BlockPool::trim) and small chunks (SmallAllocator::trim)
// that no request reached since the last time, and then, when that and the large objects freed
// meanwhile (the sessions of connections that went to sleep) come to kReturnAfter or more,
// the free pages inside malloc's heaps to the kernel (malloc_trim): after a burst of
// connections that then idle, the process's RSS falls back to what they hold. It does not keep
// the loop alive.
#include <cstddef>
#include <ev.h>

namespace portico::core {

class MemoryTrimmer {
public:
  // What a burst left is back with the allocator within two of these.
  static constexpr ev_tstamp kInterval = 10;
  static constexpr size_t kReturnAfter = 1 << 20;

  explicit MemoryTrimmer(struct ev_loop* loop);
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // One pass, as the timer runs it; returns the bytes freed to malloc.
  static size_t trim();

private:
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  struct ev_loop* loop_;
  ev_timer timer_;
};

} // namespace portico::core
