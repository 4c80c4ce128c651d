#include "upstream/dns_resolver.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <string>

namespace portico::upstream {

namespace {
struct Pending {
  DnsResolver::Callback cb;
};
} // namespace

DnsResolver::DnsResolver(struct ev_loop* loop, const std::vector<std::string>& servers)
    : loop_(loop) {
  static std::once_flag init;
  std::call_once(init, [] { ares_library_init(ARES_LIB_INIT_ALL); });
  ares_options opts{};
  opts.sock_state_cb = sock_state_cb;
  opts.sock_state_cb_data = this;
  ok_ = ares_init_options(&channel_, &opts, ARES_OPT_SOCK_STATE_CB) == ARES_SUCCESS;
  if (ok_ && !servers.empty()) {
    std::string csv;
    for (const auto& s : servers)
      csv += (csv.empty() ? "" : ",") + s;
    ok_ = ares_set_servers_ports_csv(channel_, csv.c_str()) == ARES_SUCCESS;
  }
  ev_init(&timer_, timer_cb);
  timer_.data = this;
}

DnsResolver::~DnsResolver() {
  ev_timer_stop(loop_, &timer_);
  if (channel_)
    ares_destroy(channel_); // runs pending callbacks with ARES_EDESTRUCTION
  for (auto& [fd, w] : watches_) {
    ev_io_stop(loop_, &w->io);
    delete w;
  }
}

void DnsResolver::resolve(const std::string& host, int port, Callback cb) {
  if (!ok_) {
    cb({}, 0);
    return;
  }
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string service = std::to_string(port);
  ares_getaddrinfo(channel_, host.c_str(), service.c_str(), &hints, done_cb,
                   new Pending{std::move(cb)});
  rearm_timer();
}

void DnsResolver::done_cb(void* arg, int status, int, struct ares_addrinfo* result) {
  std::unique_ptr<Pending> p(static_cast<Pending*>(arg));
  std::vector<core::SocketAddress> out;
  int ttl = 0;
  if (status == ARES_SUCCESS && result) {
    for (auto* n = result->nodes; n; n = n->ai_next) {
      core::SocketAddress a;
      if (n->ai_addrlen > sizeof a.storage)
        continue;
      std::memcpy(&a.storage, n->ai_addr, n->ai_addrlen);
      a.len = static_cast<socklen_t>(n->ai_addrlen);
      out.push_back(a);
      if (ttl == 0 || (n->ai_ttl > 0 && n->ai_ttl < ttl))
        ttl = n->ai_ttl;
    }
  }
  if (result)
    ares_freeaddrinfo(result);
  if (status != ARES_EDESTRUCTION)
    p->cb(std::move(out), ttl);
}

void DnsResolver::sock_state_cb(void* data, ares_socket_t fd, int readable, int writable) {
  auto* self = static_cast<DnsResolver*>(data);
  auto it = self->watches_.find(fd);
  if (!readable && !writable) {
    if (it != self->watches_.end()) {
      ev_io_stop(self->loop_, &it->second->io);
      delete it->second;
      self->watches_.erase(it);
    }
    return;
  }
  Watch* w;
  if (it == self->watches_.end()) {
    w = new Watch;
    w->self = self;
    ev_init(&w->io, io_cb);
    w->io.data = w;
    self->watches_[fd] = w;
  } else {
    w = it->second;
    ev_io_stop(self->loop_, &w->io);
  }
  ev_io_set(&w->io, fd, (readable ? EV_READ : 0) | (writable ? EV_WRITE : 0));
  ev_io_start(self->loop_, &w->io);
}

void DnsResolver::io_cb(struct ev_loop*, ev_io* w, int revents) {
  auto* watch = static_cast<Watch*>(w->data);
  DnsResolver* self = watch->self;
  int fd = w->fd;
  ares_process_fd(self->channel_, (revents & EV_READ) ? fd : ARES_SOCKET_BAD,
                  (revents & EV_WRITE) ? fd : ARES_SOCKET_BAD);
  self->rearm_timer();
}

void DnsResolver::timer_cb(struct ev_loop*, ev_timer* w, int) {
  auto* self = static_cast<DnsResolver*>(w->data);
  ares_process_fd(self->channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  self->rearm_timer();
}

void DnsResolver::rearm_timer() {
  timeval tv;
  ev_timer_stop(loop_, &timer_);
  if (!ares_timeout(channel_, nullptr, &tv))
    return; // nothing pending
  ev_timer_set(&timer_, static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6, 0);
  ev_timer_start(loop_, &timer_);
}

} // namespace portico::upstream
