#include "core/memory_trimmer.h"

#include "core/block_pool.h"
#include "core/small_allocator.h"

#include <malloc.h>

namespace portico::core {

MemoryTrimmer::MemoryTrimmer(struct ev_loop* loop) : loop_(loop) {
  ev_timer_init(&timer_, timer_cb, kInterval, kInterval);
  ev_timer_start(loop_, &timer_);
  ev_unref(loop_); // a loop with nothing else to do still ends
}

MemoryTrimmer::~MemoryTrimmer() {
  ev_ref(loop_);
  ev_timer_stop(loop_, &timer_);
}

size_t MemoryTrimmer::trim() {
  auto& small = SmallAllocator::local();
  size_t freed = BlockPool::local().trim() * sizeof(Block) + small.trim();
  // glibc keeps freed memory in its heaps (and, by allocator_tuning.cc, up to 64 MiB at their
  // tops): only malloc_trim gives the pages back. It walks every arena's free chunks, which is
  // why it waits for a megabyte's worth rather than running on every pass.
  if (freed + small.take_large_freed() >= kReturnAfter)
    ::malloc_trim(0);
  return freed;
}

void MemoryTrimmer::timer_cb(struct ev_loop*, ev_timer*, int) {
  trim();
}

} // namespace portico::core
