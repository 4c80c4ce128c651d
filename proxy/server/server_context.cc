#include "server/server_context.h"

#include "core/error_log.h"
#include "server/accept_share.h"
#include "server/acceptor.h"
#include "server/client_connection.h"

#include <algorithm>
#include <netinet/in.h>
#include <unistd.h>

namespace portico::server {

ServerLimits admin_limits(std::string_view server_name) {
  ServerLimits l;
  l.server_name = std::string(server_name);
  l.keepalive_timeout = 30;
  l.header_timeout = 5;
  l.send_timeout = 10;
  l.max_connections = 32;
  return l;
}

namespace {

// A client's address, without its port, as a key of the per-client counts.
uint64_t address_key(const sockaddr_storage& peer) {
  std::string_view bytes;
  if (peer.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(peer).sin_addr;
    bytes = {reinterpret_cast<const char*>(&a), sizeof a};
  } else if (peer.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr;
    bytes = {reinterpret_cast<const char*>(&a), sizeof a};
  }
  return std::hash<std::string_view>{}(bytes); // a unix socket's clients: one key
}

} // namespace

ServerContext::ServerContext(struct ev_loop* loop, RequestHandler& handler,
                             const ServerLimits& limits, core::DeferredQueue& deferred)
    : loop_(loop), handler_(&handler), limits_(limits), deferred_(&deferred) {}

ServerContext::ServerContext(struct ev_loop* loop, RequestHandler& handler,
                             const ServerLimits& limits, core::DeferredQueue& deferred,
                             ServerStats& stats)
    : loop_(loop), handler_(&handler), limits_(limits), stats_(&stats), deferred_(&deferred) {}

ServerContext::ServerContext(struct ev_loop* loop, RequestHandler& handler,
                             const ServerLimits& limits)
    : loop_(loop), handler_(&handler), limits_(limits),
      own_deferred_(std::make_unique<core::DeferredQueue>(loop)), deferred_(own_deferred_.get()) {}

ServerContext::~ServerContext() {
  close_all();
  deferred_->run(); // the closed connections are destroyed there
}

void ServerContext::adopt(int fd, SSL_CTX* tls, const sockaddr_storage& peer, uint16_t listener) {
  limits::CountTable::Ticket ticket = nullptr;
  uint32_t per_client = listener < limits_.listener_max_per_client.size()
                            ? limits_.listener_max_per_client[listener]
                            : 0;
  if (per_client) {
    ticket = limits_.listener_client_tables[listener]->acquire(address_key(peer), per_client);
    if (!ticket) { // this client has its share open already: this one goes, the rest stay
      // Counted before the close: whoever sees the connection closed sees it counted.
      stats_->count(ClientRejection::PER_CLIENT);
      core::log::write(core::log::Level::WARN, core::log::Kind::LIMIT,
                       "listener %u: a client past max_connections_per_client (%u): its new "
                       "connection closed",
                       static_cast<unsigned>(listener), per_client);
      ::close(fd);
      return;
    }
  }
  auto* c = new ClientConnection(*this, fd, tls, peer, listener);
  if (ticket) {
    c->client_table = limits_.listener_client_tables[listener];
    c->client_ticket = ticket;
  }
  c->index = connections_.size();
  c->epoch = epoch();
  ++per_epoch_.back();
  connections_.push_back(c);
  if (listener >= per_listener_.size())
    per_listener_.resize(listener + 1);
  ++per_listener_[listener];
  stats_->connections_accepted.inc();
  if (share_)
    share_->accepted(connections_.size());
  if (draining_)
    c->drain();
}

void ServerContext::mark_dirty(ClientConnection* c) {
  deferred_->add(c);
}

ClientRejection ServerContext::may_accept(uint16_t listener) const {
  if (limits_.max_connections && connections_.size() >= limits_.max_connections)
    return ClientRejection::AT_LIMIT;
  if (limits_.max_buffer_blocks &&
      stats_->buffer_blocks.load(std::memory_order_relaxed) >= limits_.max_buffer_blocks)
    return ClientRejection::MEMORY;
  uint32_t cap = listener < limits_.listener_max_connections.size()
                     ? limits_.listener_max_connections[listener]
                     : 0;
  uint32_t open = listener < per_listener_.size() ? per_listener_[listener] : 0;
  return cap == 0 || open < cap ? ClientRejection::COUNT : ClientRejection::AT_LIMIT;
}

void ServerContext::close_fds_after_fork() {
  for (ClientConnection* c : connections_)
    if (c->fd_ >= 0)
      ::close(c->fd_);
}

void ServerContext::destroy(ClientConnection* c) {
  stats_->connections_closed.inc();
  if (c->client_ticket)
    c->client_table->release(c->client_ticket);
  --per_listener_[c->listener()];
  --per_epoch_[c->epoch];
  size_t i = c->index;
  connections_[i] = connections_.back();
  connections_[i]->index = i;
  connections_.pop_back();
  deferred_->cancel(c);
  delete c;
  if (share_)
    share_->closed(connections_.size());
  for (Acceptor* a : acceptors_)
    a->on_room();
  check_drained();
}

void ServerContext::begin_drain(std::function<void()> on_drained) {
  on_drained_ = std::move(on_drained);
  if (!draining_) {
    draining_ = true;
    // Copy: draining may close connections, which edits the list.
    std::vector<ClientConnection*> all = connections_;
    for (ClientConnection* c : all)
      c->drain();
    for (DatagramEndpoint* e : std::vector<DatagramEndpoint*>(endpoints_))
      e->drain();
  }
  check_drained();
}

void ServerContext::add_endpoint(DatagramEndpoint* e) {
  endpoints_.push_back(e);
  if (draining_)
    e->drain();
}

void ServerContext::remove_endpoint(DatagramEndpoint* e) {
  std::erase(endpoints_, e);
  check_drained();
}

void ServerContext::check_drained() {
  for (DatagramEndpoint* e : endpoints_)
    if (e->open_connections() > 0)
      return;
  if (draining_ && connections_.empty() && on_drained_) {
    auto cb = std::move(on_drained_);
    on_drained_ = nullptr;
    cb();
  }
}

void ServerContext::reconfigure(RequestHandler& handler, const ServerLimits& limits,
                                const std::vector<int>& listener_map) {
  handler_ = &handler;
  limits_ = limits;
  per_epoch_.push_back(0);
  std::fill(per_listener_.begin(), per_listener_.end(), 0);
  std::vector<ClientConnection*> gone; // on a listener removed: they drain
  for (ClientConnection* c : connections_) {
    int to = c->listener() < listener_map.size() ? listener_map[c->listener()] : -1;
    if (to < 0)
      gone.push_back(c);
    // A connection on a removed listener is counted under the first until it closes.
    uint16_t index = static_cast<uint16_t>(to < 0 ? 0 : to);
    c->set_listener(index);
    if (index >= per_listener_.size())
      per_listener_.resize(index + 1);
    ++per_listener_[index];
  }
  for (ClientConnection* c : gone)
    c->drain();
}

void ServerContext::goodbye() {
  // Copy: a goodbye may end exchanges and close connections.
  std::vector<ClientConnection*> all = connections_;
  for (ClientConnection* c : all)
    c->goodbye();
}

void ServerContext::close_all_lingering(std::function<void()> on_closed) {
  draining_ = true;
  on_drained_ = std::move(on_closed);
  std::vector<ClientConnection*> all = connections_; // closing edits the list
  for (ClientConnection* c : all) {
    c->last_words();
    c->close_after_flush(true);
  }
  check_drained();
}

void ServerContext::close_all() {
  std::vector<ClientConnection*> all = connections_;
  for (ClientConnection* c : all) {
    c->last_words();
    c->close_now();
  }
}

} // namespace portico::server
