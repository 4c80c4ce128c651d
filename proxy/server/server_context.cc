#include "server/server_context.h"

#include "server/client_connection.h"

#include <algorithm>

namespace portico::server {

ServerContext::ServerContext(struct ev_loop* loop, RequestHandler& handler,
                             const ServerLimits& limits)
    : loop_(loop), handler_(handler), limits_(limits) {
  ev_prepare_init(&prepare_, prepare_cb);
  prepare_.data = this;
  ev_prepare_start(loop_, &prepare_);
  ev_idle_init(&idle_, idle_cb);
  // The prepare watcher alone must not keep the loop alive.
  ev_unref(loop_);
}

ServerContext::~ServerContext() {
  close_all();
  run_deferred();
  ev_idle_stop(loop_, &idle_);
  ev_ref(loop_);
  ev_prepare_stop(loop_, &prepare_);
}

void ServerContext::adopt(int fd, SSL_CTX* tls, const sockaddr_storage& peer, uint16_t listener) {
  auto* c = new ClientConnection(*this, fd, tls, peer, listener);
  c->index = connections_.size();
  connections_.push_back(c);
  stats_.connections_accepted.inc();
  if (draining_)
    c->drain();
}

void ServerContext::mark_dirty(ClientConnection* c) {
  if (c->dirty_)
    return;
  c->dirty_ = true;
  dirty_.push_back(c);
}

void ServerContext::remove(ClientConnection* c) {
  stats_.connections_closed.inc();
  size_t i = c->index;
  connections_[i] = connections_.back();
  connections_[i]->index = i;
  connections_.pop_back();
}

void ServerContext::prepare_cb(struct ev_loop*, ev_prepare* w, int) {
  static_cast<ServerContext*>(w->data)->run_deferred();
}

void ServerContext::run_deferred() {
  // Work done here can queue more (a drained socket lets a producer write again): a few rounds.
  for (int round = 0; round < 4 && !dirty_.empty(); ++round) {
    dirty_scratch_.swap(dirty_);
    for (ClientConnection* c : dirty_scratch_) {
      if (c->run_deferred())
        continue;
      if (c->dirty_)
        dirty_.erase(std::find(dirty_.begin(), dirty_.end(), c));
      remove(c);
      delete c;
    }
    dirty_scratch_.clear();
  }
  // Work queued in the last round (a producer woken by a drained socket that then wrote
  // everything) has no watcher to bring the loop back: keep it from sleeping until done.
  if (dirty_.empty())
    ev_idle_stop(loop_, &idle_);
  else
    ev_idle_start(loop_, &idle_);
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
  }
  check_drained();
}

void ServerContext::check_drained() {
  if (draining_ && connections_.empty() && on_drained_) {
    auto cb = std::move(on_drained_);
    on_drained_ = nullptr;
    cb();
  }
}

void ServerContext::close_all() {
  std::vector<ClientConnection*> all = connections_;
  for (ClientConnection* c : all)
    c->close_now();
}

} // namespace portico::server
