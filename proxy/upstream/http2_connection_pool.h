#pragma once
// h2c connections to one endpoint, each carrying many streams: a request takes a stream on the
// connection with the fewest, and new connections open first until the cluster's
// h2_connections carry streams (so requests spread over that many of a preforked upstream's
// workers). Within one loop pass, requests follow the pass's first onto the same connection
// while it carries fewer than kBurst streams more than the least busy one: a client's burst
// then goes up in one write and its answers come back in one read, so the client gets them in
// one write too; and a busy loop, whose every pass holds many clients' requests, still spreads
// them instead of pinning its load on one upstream process.
#include "core/intrusive_list.h"
#include "upstream/connection_pool.h"
#include "upstream/http2_upstream_connection.h"

namespace portico::upstream {

class UpstreamPool;

class Http2ConnectionPool final : public ConnectionPool {
public:
  explicit Http2ConnectionPool(UpstreamPool& owner) : owner_(owner) {}
  ~Http2ConnectionPool() override = default;
  Http2ConnectionPool(const Http2ConnectionPool&) = delete;
  Http2ConnectionPool& operator=(const Http2ConnectionPool&) = delete;

  // ConnectionPool. A stream refused by the upstream is retried on any connection with room
  // (fresh is ignored): the refusal says nothing against the connection.
  bool reuse(UpstreamStreamListener* listener, bool fresh) override;
  void open(int fd, bool connected, UpstreamStreamListener* listener) override;
  bool close_one_idle() override { return false; } // a connection with no stream costs little
  void close_all() override;
  size_t connections() const override { return count_; }
  size_t idle() const override { return idle_; } // connections carrying no stream
  size_t in_flight() const override { return streams_; }
  // While h2_connections are open, one of which has not had the server's SETTINGS yet.
  bool room_coming() const override;

  UpstreamPool& owner() const { return owner_; }

  // From Http2UpstreamConnection: a stream opened (first: the connection's only one now) or
  // ended (last: none is left); the server allowed more streams (SETTINGS); the connection
  // closed (it is disposed of after this callback).
  void stream_opened(bool first);
  void stream_done(bool last);
  void room_grew();
  void closed(Http2UpstreamConnection* c);

  // How far a pass's connection may run ahead of the least busy one (a client's burst: h2load
  // -m10, a browser's page).
  static constexpr size_t kBurst = 16;

private:
  Http2UpstreamConnection* with_room();

  UpstreamPool& owner_;
  using List = core::IntrusiveList<Http2UpstreamConnection, &Http2UpstreamConnection::pool_hook>;
  List conns_;
  size_t count_ = 0;
  size_t streams_ = 0; // in flight on all of them
  size_t idle_ = 0;    // connections carrying none: kept as they change, the gauges ask often
  // Where this loop pass's requests went (ev_iteration), until it closes or fills.
  Http2UpstreamConnection* pass_conn_ = nullptr;
  unsigned int pass_ = 0;
};

} // namespace portico::upstream
