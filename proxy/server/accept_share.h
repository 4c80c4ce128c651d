#pragma once
// Processes that share one listening socket agree on who takes the next connection. The
// kernel wakes every sharer (or the last one to wait) and the first to run accepts all that
// are queued: a burst of connections opened at once (a proxy's pooled h2c connections) lands on
// one process, and stays there for the connections' lifetime. Before each accept an Acceptor
// with a share asks whether another sharer holds fewer connections; if so it leaves the
// connection to that one for a moment (nginx's accept_disabled, by connection count).
#include <cstddef>
#include <cstdint>

namespace portico::server {

class AcceptShare {
public:
  virtual ~AcceptShare() = default;
  // This process accepted a connection, or one closed; it now holds `held`.
  virtual void accepted(size_t held) = 0;
  virtual void closed(size_t held) = 0;
  // This process accepts (true) or has stopped accepting for good (false: draining).
  virtual void set_accepting(bool accepting) = 0;
  // Another sharer that accepts holds fewer connections than this process's mine.
  virtual bool another_holds_fewer(size_t mine) const = 0;
  // Connections accepted by every sharer so far: whether the others took any while this one
  // waited.
  virtual uint64_t accepted_by_all() const = 0;
};

} // namespace portico::server
