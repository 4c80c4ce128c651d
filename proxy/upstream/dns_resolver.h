#pragma once
// Asynchronous name resolution for one worker's loop, on c-ares: its sockets are watched with
// ev_io and its timeouts with one ev_timer, so resolving never blocks the loop.
#include "core/endpoint_address.h"

#include <ares.h>
#include <ev.h>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace portico::upstream {

class DnsResolver {
public:
  // addresses empty on failure; ttl in seconds (0 when unknown).
  using Callback = std::function<void(std::vector<core::SocketAddress> addresses, int ttl)>;

  // servers: "IP", "IP:PORT" or "[v6]:PORT" each; empty: /etc/resolv.conf's.
  explicit DnsResolver(struct ev_loop* loop, const std::vector<std::string>& servers = {});
  ~DnsResolver();
  DnsResolver(const DnsResolver&) = delete;
  DnsResolver& operator=(const DnsResolver&) = delete;

  bool ok() const { return ok_; }
  void resolve(const std::string& host, int port, Callback cb);

private:
  struct Watch {
    ev_io io;
    DnsResolver* self;
  };
  static void sock_state_cb(void* data, ares_socket_t fd, int readable, int writable);
  static void io_cb(struct ev_loop* loop, ev_io* w, int revents);
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void done_cb(void* arg, int status, int timeouts, struct ares_addrinfo* result);
  void rearm_timer();

  struct ev_loop* loop_;
  ares_channel channel_ = nullptr;
  bool ok_ = false;
  ev_timer timer_;
  std::unordered_map<int, Watch*> watches_;
};

} // namespace portico::upstream
