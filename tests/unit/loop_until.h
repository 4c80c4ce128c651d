#pragma once
// Turning a test's libev loop until a condition holds. done() is also asked after each
// iteration's deferred work, before the loop would block (a lowest-priority ev_prepare), so
// what that work did is seen at once, not after the next timer and whatever that timer does;
// a watchdog timer ends a wait for what never happens.
#include <ev.h>
#include <functional>

namespace portico::unit {

// False if limit seconds pass first.
inline bool run_loop_until(struct ev_loop* loop, const std::function<bool()>& done,
                           ev_tstamp limit) {
  struct Wait {
    const std::function<bool()>* done;
    bool expired = false;
  } wait{&done};
  ev_timer watchdog;
  ev_timer_init(
      &watchdog,
      [](struct ev_loop*, ev_timer* w, int) { static_cast<Wait*>(w->data)->expired = true; }, limit,
      0);
  watchdog.data = &wait;
  ev_prepare check;
  ev_prepare_init(&check, [](struct ev_loop* l, ev_prepare* w, int) {
    if ((*static_cast<Wait*>(w->data)->done)())
      ev_break(l, EVBREAK_ONE);
  });
  ev_set_priority(&check, EV_MINPRI); // after the deferral queue's own ev_prepare
  check.data = &wait;
  ev_now_update(loop);
  ev_timer_start(loop, &watchdog);
  ev_prepare_start(loop, &check);
  while (!done() && !wait.expired)
    ev_run(loop, EVRUN_ONCE);
  ev_prepare_stop(loop, &check);
  ev_timer_stop(loop, &watchdog);
  return done();
}

} // namespace portico::unit
