#include "filters/deadline.h"

namespace portico::filters {

void Deadline::start(double seconds) {
  loop_ = exchange().loop();
  timer_.data = this;
  ev_timer_set(&timer_, seconds, 0);
  ev_timer_start(loop_, &timer_);
}

void Deadline::stop() {
  if (loop_ && ev_is_active(&timer_))
    ev_timer_stop(loop_, &timer_);
}

void Deadline::expired(struct ev_loop*, ev_timer* w, int) {
  static_cast<Deadline*>(w->data)->fail(
      504, "its deadline ran out (the route's timeout, or grpc-timeout)");
}

} // namespace portico::filters
