#pragma once
// Processes that share one listening socket agree on who takes the next connection. The
// kernel wakes the sharers and the first to run accepts all that are queued: a burst of
// connections opened at once (a proxy's pooled h2c connections) lands on one process, and stays
// there for the connections' lifetime. Before each accept an Acceptor with a share asks for the
// sharer holding the fewest connections, if that is fewer than its own; it then leaves the
// connection to that one for a moment (nginx's accept_disabled, by connection count). A sharer
// that took none meanwhile (stopped, stuck in a long request, not yet scheduled) is passed
// over for a while, so that it holds up one connection, not every one.
#include <cstddef>
#include <cstdint>

namespace portico::server {

class AcceptShare {
public:
  virtual ~AcceptShare() = default;
  // This process accepted a connection, or one closed; it now holds `held`.
  virtual void accepted(size_t held) = 0;
  virtual void closed(size_t held) = 0;
  // This process has stopped accepting for good (draining): no one waits for it. A sharer
  // counts as accepting from the start (its master says so before it runs).
  virtual void stop_accepting() = 0;
  // The accepting sharer, not passed over, that holds the fewest connections if fewer than
  // mine; -1 when there is none (this process takes the connection).
  virtual int fewer_than(size_t mine) const = 0;
  // Connections sharer `other` has accepted so far: whether it took any while this one waited.
  virtual uint64_t accepted_by(int other) const = 0;
  // Sharer `other` took none while this one waited: others skip it for a while.
  virtual void pass_over(int other) = 0;
};

} // namespace portico::server
