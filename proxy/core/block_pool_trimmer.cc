#include "core/block_pool_trimmer.h"

#include "core/block_pool.h"

namespace portico::core {

BlockPoolTrimmer::BlockPoolTrimmer(struct ev_loop* loop) : loop_(loop) {
  ev_timer_init(&timer_, timer_cb, kInterval, kInterval);
  ev_timer_start(loop_, &timer_);
  ev_unref(loop_); // a loop with nothing else to do still ends
}

BlockPoolTrimmer::~BlockPoolTrimmer() {
  ev_ref(loop_);
  ev_timer_stop(loop_, &timer_);
}

void BlockPoolTrimmer::timer_cb(struct ev_loop*, ev_timer*, int) {
  BlockPool::local().trim();
}

} // namespace portico::core
