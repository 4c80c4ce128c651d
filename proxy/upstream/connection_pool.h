#pragma once
// The connections of one protocol to one endpoint, as UpstreamPool (the protocol-neutral part:
// waiting queue, address, limits, health, gauges) sees them. Http1ConnectionPool keeps
// connections that carry one exchange at a time and idle between them; Http2ConnectionPool
// keeps a few connections that carry many streams each. A new protocol, or TLS under one,
// is another implementation of this and touches neither of the others.
#include "upstream/upstream_stream_listener.h"

#include <cstddef>

namespace portico::upstream {

class ConnectionPool {
public:
  virtual ~ConnectionPool() = default;

  // Hands listener a way upstream on a connection that is already open — an idle HTTP/1.1
  // connection (none when fresh: a retry after a reused one failed), an h2c connection with
  // room for a stream — and returns true; listener->on_upstream_ready has run. False: none
  // is free, and nothing happened.
  virtual bool reuse(UpstreamStreamListener* listener, bool fresh) = 0;
  // Takes fd, a socket connecting to the endpoint (connected: the connect is done already),
  // as a new connection and hands listener its first exchange or stream (on_upstream_ready
  // runs before this returns).
  virtual void open(int fd, bool connected, UpstreamStreamListener* listener) = 0;
  // At the connection limit, a retry needs a fresh connection: close an idle one to make
  // room. False: there was none to close.
  virtual bool close_one_idle() = 0;
  // Closes every connection, failing what they carry (the pool is going away).
  virtual void close_all() = 0;

  // Open connections (connecting ones included): what max_connections limits.
  virtual size_t connections() const = 0;
  // Connections carrying nothing.
  virtual size_t idle() const = 0;
  // Requests in flight: for balancing (an h2c connection carries many).
  virtual size_t in_flight() const = 0;
  // None has room now, but one will without opening another: an h2c connection whose
  // server's SETTINGS are on their way (its stream limit is a guess until then). A request
  // then waits for it; a connection opened instead would stay and take its share for good.
  virtual bool room_coming() const { return false; }
};

} // namespace portico::upstream
