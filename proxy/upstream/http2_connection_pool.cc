#include "upstream/http2_connection_pool.h"

#include "upstream/upstream_pool.h"

#include <algorithm>

namespace portico::upstream {

void Http2ConnectionPool::close_all() {
  while (Http2UpstreamConnection* c = conns_.front())
    c->close(UpstreamError::RESET);
}

Http2UpstreamConnection* Http2ConnectionPool::with_room() {
  Http2UpstreamConnection* best = nullptr;
  size_t open = 0;
  for (Http2UpstreamConnection* c = conns_.front(); c; c = List::next(c)) {
    open += c->state() != Http2UpstreamConnection::State::DRAINING;
    if (c->can_take() && (!best || c->streams() < best->streams()))
      best = c;
  }
  // Open another first, while h2_connections are not all carrying streams and this worker's
  // share of max_connections allows one; else the busiest connection is still better than the
  // queue.
  if (best && best->streams() > 0 && open < static_cast<size_t>(owner_.cluster().h2_connections) &&
      owner_.may_open())
    return nullptr;
  // This pass's connection while it is within a burst of the least busy: a client's burst
  // stays together, and a busy loop (every pass a burst of many clients) still spreads.
  unsigned int pass = ev_iteration(owner_.loop());
  if (best && pass_conn_ && pass_ == pass && pass_conn_->can_take() &&
      pass_conn_->streams() < best->streams() + kBurst)
    return pass_conn_;
  pass_conn_ = best;
  pass_ = pass;
  return best;
}

bool Http2ConnectionPool::room_coming() const {
  size_t open = 0;
  bool guessing = false;
  for (const Http2UpstreamConnection* c = conns_.front(); c; c = List::next(c)) {
    bool usable = c->state() == Http2UpstreamConnection::State::CONNECTING ||
                  c->state() == Http2UpstreamConnection::State::OPEN;
    open += usable;
    guessing |= usable && !c->stream_limit_known();
  }
  return guessing && open >= static_cast<size_t>(owner_.cluster().h2_connections);
}

bool Http2ConnectionPool::reuse(UpstreamStreamListener* listener, bool) {
  Http2UpstreamConnection* c = with_room();
  if (!c)
    return false;
  c->open_stream(listener);
  return true;
}

void Http2ConnectionPool::open(int fd, bool, UpstreamStreamListener* listener) {
  // A connection done connecting still waits for writability: a few open per endpoint, not
  // one per request, and its first write is the preface and SETTINGS.
  auto* c = new Http2UpstreamConnection(*this, fd);
  conns_.push_front(c);
  ++count_;
  ++idle_; // until its first stream, just below
  pass_conn_ = c;
  pass_ = ev_iteration(owner_.loop());
  c->open_stream(listener);
}

void Http2ConnectionPool::stream_opened(bool first) {
  ++streams_;
  idle_ -= first;
  owner_.publish();
}

void Http2ConnectionPool::stream_done(bool last) {
  --streams_;
  idle_ += last;
  owner_.room_freed();
}

void Http2ConnectionPool::room_grew() {
  owner_.room_freed();
}

void Http2ConnectionPool::closed(Http2UpstreamConnection* c) {
  if (pass_conn_ == c)
    pass_conn_ = nullptr;
  conns_.erase(c);
  --count_;
  idle_ -= c->streams() == 0;
  streams_ -= std::min(streams_, c->streams());
  owner_.deferred().dispose(c);
  owner_.room_freed();
}

} // namespace portico::upstream
