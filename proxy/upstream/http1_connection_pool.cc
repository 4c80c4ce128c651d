#include "upstream/http1_connection_pool.h"

#include "upstream/upstream_pool.h"

#include <algorithm>

namespace portico::upstream {

namespace {
// Without a hint from the upstream, retire idle connections after this long: shorter than
// the common defaults (nginx 75 s, Apache 5 s, portico-backend 5 s), and an EOF seen while idle
// retires them sooner.
constexpr double kDefaultIdle = 4.0;
// Retire this much before an advertised keep-alive timeout: the close must not race the reuse.
constexpr double kIdleMargin = 0.5;
// A learned idle timeout is used at this fraction: the upstream's clock and ours drift, and its
// close takes a while to arrive.
constexpr double kLearnedFraction = 0.75;
// A close sooner than this after going idle is not an idle timeout (a worker retiring, a
// restart) and teaches nothing.
constexpr double kMinLearnedIdle = 0.2;
} // namespace

Http1ConnectionPool::Http1ConnectionPool(UpstreamPool& owner) : owner_(owner) {
  ev_init(&idle_timer_, idle_timer_cb);
  idle_timer_.data = this;
}

Http1ConnectionPool::~Http1ConnectionPool() {
  ev_timer_stop(owner_.loop(), &idle_timer_);
}

void Http1ConnectionPool::close_all() {
  ev_timer_stop(owner_.loop(), &idle_timer_);
  while (Http1UpstreamConnection* u = idle_.front()) {
    unlink_idle(u);
    u->close();
  }
}

bool Http1ConnectionPool::reuse(UpstreamStreamListener* listener, bool fresh) {
  while (!fresh && idle_.front()) {
    Http1UpstreamConnection* u = idle_.front();
    unlink_idle(u);
    if (u->idle_event_pending()) {
      // The upstream closed it or sent something since it went idle, in this very loop
      // iteration (the idle watcher has not run yet): not this request's connection.
      u->close();
      continue;
    }
    hand_to(u, listener);
    return true;
  }
  return false;
}

void Http1ConnectionPool::open(int fd, bool connected, UpstreamStreamListener* listener) {
  ++open_;
  hand_to(new Http1UpstreamConnection(*this, fd, connected), listener);
}

bool Http1ConnectionPool::close_one_idle() {
  Http1UpstreamConnection* u = idle_.back();
  if (!u)
    return false;
  unlink_idle(u);
  u->close();
  return true;
}

void Http1ConnectionPool::hand_to(Http1UpstreamConnection* u, UpstreamStreamListener* listener) {
  u->attach(listener, listener->is_head_request());
  listener->on_upstream_ready(*u);
}

void Http1ConnectionPool::release(Http1UpstreamConnection* u, bool reusable,
                                  double keepalive_hint) {
  if (!reusable) {
    u->close();
    return;
  }
  if (owner_.waiting() > 0) {
    // Straight to a waiting request, without a pass through the idle watcher: bytes after the
    // response's end, or its close, may already be here.
    if (!u->quiet()) {
      u->close(); // on_closed serves the waiter with a fresh connection
      return;
    }
    u->idle_since = ev_now(owner_.loop()); // idle for no time: if it dies, nothing is learned
    hand_to(u, owner_.take_waiter());
    return;
  }
  u->idle_since = ev_now(owner_.loop());
  u->idle_until = u->idle_since + retire_after(keepalive_hint);
  if (idle_count_ >= static_cast<size_t>(owner_.cluster().max_idle_per_endpoint)) {
    u->close();
    return;
  }
  push_idle(u);
}

double Http1ConnectionPool::retire_after(double keepalive_hint) const {
  const auto& cfg = owner_.cluster();
  double idle = cfg.idle_timeout > 0 ? cfg.idle_timeout : kDefaultIdle;
  if (keepalive_hint > 0)
    idle = std::min(idle, std::max(0.1, keepalive_hint - kIdleMargin));
  if (learned_idle_ > 0)
    idle = std::min(idle, std::max(0.1, learned_idle_ * kLearnedFraction));
  return idle;
}

void Http1ConnectionPool::note_idle_closed(double idle_seconds) {
  if (idle_seconds < kMinLearnedIdle || (learned_idle_ > 0 && idle_seconds >= learned_idle_))
    return;
  learned_idle_ = idle_seconds;
  // The connections idle now go by it too.
  double limit = std::max(0.1, learned_idle_ * kLearnedFraction);
  for (Http1UpstreamConnection* u = idle_.front(); u; u = IdleList::next(u)) {
    u->idle_until = std::min(u->idle_until, u->idle_since + limit);
    retire_by(u->idle_until);
  }
}

void Http1ConnectionPool::on_closed(Http1UpstreamConnection* u) {
  unlink_idle(u);
  --open_;
  owner_.deferred().dispose(u);
  owner_.room_freed();
}

void Http1ConnectionPool::push_idle(Http1UpstreamConnection* u) {
  idle_.push_front(u);
  ++idle_count_;
  owner_.publish();
  retire_by(u->idle_until); // sooner than the others, for a shorter Keep-Alive hint
}

void Http1ConnectionPool::unlink_idle(Http1UpstreamConnection* u) {
  if (!idle_.erase(u))
    return; // not in the list
  --idle_count_;
  owner_.publish();
}

void Http1ConnectionPool::retire_by(double until) {
  // One timer for the whole list, at the earliest retirement asked for; its callback scans
  // the list (short) and sets it again for the next.
  struct ev_loop* loop = owner_.loop();
  double now = ev_now(loop);
  if (ev_is_active(&idle_timer_)) {
    if (now + ev_timer_remaining(loop, &idle_timer_) <= until)
      return;
    ev_timer_stop(loop, &idle_timer_);
  }
  ev_timer_set(&idle_timer_, std::max(0.05, until - now), 0);
  ev_timer_start(loop, &idle_timer_);
}

void Http1ConnectionPool::idle_timer_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<Http1ConnectionPool*>(w->data)->on_idle_timer();
}

void Http1ConnectionPool::on_idle_timer() {
  double now = ev_now(owner_.loop());
  double next = 0;
  for (Http1UpstreamConnection* u = idle_.front(); u;) {
    Http1UpstreamConnection* n = IdleList::next(u);
    if (u->idle_until <= now) {
      unlink_idle(u);
      u->close();
    } else if (next == 0 || u->idle_until < next) {
      next = u->idle_until;
    }
    u = n;
  }
  if (next > 0)
    retire_by(next);
}

} // namespace portico::upstream
