#pragma once
// The listening sockets of the process, by listener address, kept across reloads and handed
// to a new binary on an upgrade: a listener whose address stays keeps its socket, so no
// connection is ever refused while the configuration or the program changes.
//
// A TCP listener has a socket per worker (SO_REUSEPORT: the kernel spreads connections over
// them); socket i goes to worker i % workers, so a socket once open is never closed while its
// listener stays. The first of them is opened only on an address nobody listens on: another
// process (a second portico) would otherwise join the group and take a share of the
// connections. A unix socket is one, shared by the workers through EPOLLEXCLUSIVE. A QUIC
// listener has a UDP socket per worker as well, in a group of its own.
#include "config/config.h"
#include "core/expected.h"

#include <map>
#include <string>
#include <vector>

namespace portico::proxy {

class ListenerSockets {
public:
  ListenerSockets() = default;
  ~ListenerSockets();
  ListenerSockets(const ListenerSockets&) = delete;
  ListenerSockets& operator=(const ListenerSockets&) = delete;

  // The sockets an old process handed over in $PORTICO_LISTEN_FDS (binary upgrade), which is
  // then unset; an entry that is not a listening socket is an error.
  core::expected<void, std::string> inherit_from_environment();
  // Makes sure every listener of cfg (and its admin endpoint) has its sockets: those held are
  // kept, the others opened. On an error nothing is opened (what this call opened is closed).
  core::expected<void, std::string> open_for(const config::Config& cfg, int workers);
  // The sockets worker `worker` of `workers` accepts on for a listener.
  std::vector<int> for_worker(const core::ListenAddress& a, int worker, int workers) const;
  // The UDP sockets worker `worker` reads a QUIC listener's datagrams from: socket number
  // `worker` of the group is its own, which the steering program sends its connections to.
  std::vector<int> quic_for_worker(const core::ListenAddress& a, int worker, int workers) const;
  int admin_fd(const config::Config& cfg) const; // -1: the admin endpoint is off
  // The admin endpoint's control socket ([admin] control_socket); -1: none.
  int control_fd(const config::Config& cfg) const;
  // Closes (and for unix sockets unlinks) every socket cfg has no listener for.
  void close_unused(const config::Config& cfg);
  // A graceful stop: every listener (not the admin endpoint, whose /readyz says "draining")
  // refuses connects at once, so that a balancer sends them to the next instance. Never after
  // an upgrade: the sockets are the new process's too.
  void stop_listening();
  // "KEY FD,FD\n" lines for $PORTICO_LISTEN_FDS, every descriptor listed.
  std::string environment_value() const;
  std::vector<int> all_fds() const;
  // After a successful upgrade the new process owns the unix socket files: closing at exit
  // leaves them in place.
  void handed_over() { handed_over_ = true; }
  // A process an upgrade started owns the unix socket files it inherited only once it serves:
  // one that fails before leaves them to the old process, which still listens on them.
  void take_ownership() { owns_inherited_ = true; }

private:
  struct Entry {
    std::vector<int> fds;
    std::string unix_path; // unlinked when closed, unless handed over
    bool inherited = false;
  };
  static std::string admin_key(const config::Config& cfg);
  // "udp " + the address's key: a QUIC listener's UDP sockets, one per worker.
  static std::string quic_key(const core::ListenAddress& a);
  // "admin unix:PATH": the admin endpoint's sockets share admin_key's prefix and its fate.
  static std::string control_key(const config::Config& cfg);
  // Whether a listener's TCP socket held takes a's port as well.
  bool holds_tcp_covering(const core::ListenAddress& a) const;
  void close_entry(const Entry& e) const;

  std::map<std::string, Entry> by_key_; // config::socket_key, or "admin " + it
  bool handed_over_ = false;
  bool owns_inherited_ = false;
};

} // namespace portico::proxy
