#pragma once
// Everything one worker thread's server side shares: its loop, its handler, its limits, and
// the connections it owns. Connections queue themselves on the loop's one DeferredQueue; once
// per loop iteration (after every callback has run) each parses deferred input, flushes its
// output with one writev, or is destroyed when closed, so no object is ever deleted inside its
// own callback.
#include "core/deferred_queue.h"
#include "core/memory_trimmer.h"
#include "http/header.h"
#include "http/http1_request_parser.h"
#include "limits/count_table.h"
#include "metrics/server_stats.h"
#include "server/exchange.h"

#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <openssl/ssl.h>
#include <string>
#include <sys/socket.h>
#include <vector>

namespace portico::server {

using metrics::ClientRejection;
using metrics::ClientTimeout;
using metrics::ServerStats;

class AcceptShare;
class Acceptor;
class ClientConnection;

// Connections the context does not hold as ClientConnections (QUIC's, over one UDP socket),
// which a graceful stop must still drain and wait for.
class DatagramEndpoint {
public:
  virtual ~DatagramEndpoint() = default;
  virtual void drain() = 0;
  virtual size_t open_connections() const = 0;
};

struct ServerLimits {
  http::ParserLimits parser;
  ev_tstamp keepalive_timeout = 5; // idle connection between requests
  ev_tstamp header_timeout = 30;   // from a request head's first byte to its last
  // A client that takes no response byte for this long while some wait for it is cut: the
  // connection closed, or on HTTP/2 the stream whose window stays shut reset.
  ev_tstamp send_timeout = 60;
  ev_tstamp linger_timeout = 2; // reading and dropping input after a close
  // In a graceful stop an idle HTTP/1 connection stays open this long after its last activity:
  // a client about to reuse it gets an answer with "Connection: close" instead of a socket
  // closed under its request (the keep-alive race, moved out of every restart).
  ev_tstamp drain_idle_grace = 1;
  uint32_t h2_max_concurrent_streams = 100;
  // A used HTTP/2 connection idle this long puts its nghttp2 session away (0: never); one
  // that has opened no stream does at once.
  ev_tstamp h2_sleep_after = 1;
  // Client connections this context holds at most, and per listener index (0: no limit).
  // At the limit accepting pauses; the kernel's backlog holds the rest.
  uint32_t max_connections = 0;
  std::vector<uint32_t> listener_max_connections;
  // Per listener index: open connections one client address may have over the process (0: no
  // limit), counted in a table every worker shares.
  std::vector<uint32_t> listener_max_per_client;
  std::vector<std::shared_ptr<limits::CountTable>> listener_client_tables;
  // Per listener index: its connections begin with a PROXY protocol header (1) or not (0).
  std::vector<uint8_t> listener_proxy_protocol;
  bool proxy_protocol(uint16_t listener) const {
    return listener < listener_proxy_protocol.size() && listener_proxy_protocol[listener];
  }
  // Per listener index: the Alt-Svc value its TLS responses advertise HTTP/3 with (a QUIC
  // listener on the same address), or empty.
  std::vector<std::string> listener_alt_svc;
  std::string_view alt_svc(uint16_t listener) const {
    return listener < listener_alt_svc.size() ? std::string_view(listener_alt_svc[listener])
                                              : std::string_view();
  }
  // The field to add to a response head on listener (over TLS), or empty: none configured, or
  // the response has its own.
  template <typename Head> std::string_view alt_svc_for(uint16_t listener, const Head& head) const {
    std::string_view v = alt_svc(listener);
    if (!v.empty())
      head.for_each([&](const auto& h) {
        if (http::iequals(h.name, "alt-svc"))
          v = {};
      });
    return v;
  }
  // Buffer blocks this context's thread may hold before it stops accepting (0: no limit), and
  // the response bytes one connection or stream may hold before it is aborted: a producer
  // that ignores the watermarks cannot take the memory of the rest.
  int64_t max_buffer_blocks = 0;
  size_t max_buffered_response_bytes = 4 << 20;
  std::string server_name = "portico"; // the Server header
};

// An admin endpoint's limits (portico's, portico-backend master's): a scraper or a prober needs
// a few connections and quick answers, and the loop it shares with supervision must never be
// held: at most 32 connections, a request head within 5 s, output taken within 10 s.
ServerLimits admin_limits(std::string_view server_name);

class ServerContext {
public:
  // deferred: the loop's one deferral queue, shared with whatever else runs on the loop (a
  // proxy worker's upstreams). Without one the context makes its own (the loop has no other).
  ServerContext(struct ev_loop* loop, RequestHandler& handler, const ServerLimits& limits,
                core::DeferredQueue& deferred);
  // stats: counted there rather than in the context's own, so that the contexts a worker
  // runs one after another across reloads add up to one set of figures.
  ServerContext(struct ev_loop* loop, RequestHandler& handler, const ServerLimits& limits,
                core::DeferredQueue& deferred, ServerStats& stats);
  ServerContext(struct ev_loop* loop, RequestHandler& handler, const ServerLimits& limits);
  ~ServerContext();
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  struct ev_loop* loop() const {
    return loop_;
  }
  RequestHandler& handler() const { return *handler_; }
  const ServerLimits& limits() const { return limits_; }
  ServerStats& stats() { return *stats_; }
  const ServerStats& stats() const { return *stats_; }

  // Takes ownership of an accepted socket; tls: the listener's context, or null.
  void adopt(int fd, SSL_CTX* tls, const sockaddr_storage& peer, uint16_t listener = 0);
  core::DeferredQueue& deferred() { return *deferred_; }
  void mark_dirty(ClientConnection* c);
  // A closed connection, from its deferred run: removed and destroyed.
  void destroy(ClientConnection* c);
  size_t connection_count() const { return connections_.size(); }

  // The acceptors feeding this context, told when a connection closes (they may be paused at
  // a limit), and asked before each accept whether one more fits.
  void add_acceptor(Acceptor* a) { acceptors_.push_back(a); }
  void remove_acceptor(Acceptor* a) { std::erase(acceptors_, a); }
  // AT_LIMIT or MEMORY when one more connection does not fit now, else COUNT.
  ClientRejection may_accept(uint16_t listener) const;
  // Other processes share the listening sockets and balance with this one (null: none).
  void set_accept_share(AcceptShare* share) { share_ = share; }
  AcceptShare* accept_share() const { return share_; }

  // Graceful stop: busy connections close after their current exchanges, with "Connection:
  // close" on HTTP/1 and GOAWAY on HTTP/2 (a notice first, the last stream id a round trip
  // later); idle ones after limits().drain_idle_grace without a request, so that one already
  // on its way is answered. on_drained runs once none is left.
  void begin_drain(std::function<void()> on_drained);
  // A datagram endpoint's connections count in a drain; it calls endpoint_idle() when its
  // last one is gone.
  void add_endpoint(DatagramEndpoint* e);
  void remove_endpoint(DatagramEndpoint* e);
  void endpoint_idle() { check_drained(); }
  bool draining() const { return draining_; }
  // After begin_drain, when long-lived exchanges have had their window ([server]
  // long_lived_drain): each WebSocket tunnel sends a close frame (1001, going away) both ways
  // at a frame boundary, then ends as its upstream closes.
  void goodbye();
  // Closes every connection at once.
  void close_all();
  // The end of a stop: each connection's last words (RST_STREAM CANCEL on HTTP/2), then a
  // lingering close, so that what a client sent meanwhile is read and dropped rather than
  // answered with a reset that can destroy them. on_closed runs once none is left.
  void close_all_lingering(std::function<void()> on_closed);

  // A reload (Envoy's model rather than a drain): every request from now on, on connections
  // old and new, goes to handler under limits; exchanges under way finish with the handler
  // they started with. listener_map: each old listener index's new one, or -1 for a listener
  // removed, whose connections drain. Starts a new epoch.
  void reconfigure(RequestHandler& handler, const ServerLimits& limits,
                   const std::vector<int>& listener_map);
  uint32_t epoch() const { return static_cast<uint32_t>(per_epoch_.size() - 1); }
  // Connections accepted during epoch e that are still open (they hold its TLS context).
  uint32_t open_from_epoch(uint32_t e) const { return e < per_epoch_.size() ? per_epoch_[e] : 0; }
  // In a child after fork(): every connection's descriptor closed, nothing else touched (the
  // loop and the objects are the parent's).
  void close_fds_after_fork();

private:
  void check_drained();

  struct ev_loop* loop_;
  core::MemoryTrimmer trimmer_{loop_}; // the memory this thread's connections leave idle
  RequestHandler* handler_;
  ServerLimits limits_;
  ServerStats own_stats_;
  ServerStats* stats_ = &own_stats_;
  std::unique_ptr<core::DeferredQueue> own_deferred_; // when the loop had none
  core::DeferredQueue* deferred_;
  std::vector<ClientConnection*> connections_; // index kept in each connection
  std::vector<uint32_t> per_listener_;         // open connections by listener index
  std::vector<uint32_t> per_epoch_{0};         // open connections by epoch accepted in
  std::vector<Acceptor*> acceptors_;
  std::vector<DatagramEndpoint*> endpoints_;
  AcceptShare* share_ = nullptr;
  bool draining_ = false;
  std::function<void()> on_drained_;
};

} // namespace portico::server
