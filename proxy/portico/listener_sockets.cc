#include "portico/listener_sockets.h"

#include "config/config_diff.h"
#include "core/error_log.h"
#include "quic/udp_socket.h"

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::proxy {

namespace {
constexpr int kBacklog = 4096;
constexpr int kAdminBacklog = 128;
constexpr const char* kEnv = "PORTICO_LISTEN_FDS";

bool is_listening_socket(int fd) {
  int on = 0;
  socklen_t len = sizeof on;
  return ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on;
}

bool is_udp_socket(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_DGRAM;
}

bool has_control_socket(const config::Config& cfg) {
  return cfg.admin.enabled && !cfg.admin.control_socket.path.empty();
}
} // namespace

ListenerSockets::~ListenerSockets() {
  for (const auto& [key, e] : by_key_)
    close_entry(e);
}

void ListenerSockets::close_entry(const Entry& e) const {
  for (int fd : e.fds)
    ::close(fd);
  if (!e.unix_path.empty() && !handed_over_ && (!e.inherited || owns_inherited_))
    ::unlink(e.unix_path.c_str());
}

bool ListenerSockets::holds_tcp_covering(const core::ListenAddress& a) const {
  // A reload from 0.0.0.0:80 to 127.0.0.1:80 binds the new address while the old socket, ours,
  // still listens: the group's first socket may then share the port with our own.
  for (const auto& [key, e] : by_key_) {
    if (key.rfind("tcp:", 0) != 0)
      continue;
    size_t colon = key.rfind(':');
    core::ListenAddress held;
    held.host = key.substr(4, colon - 4);
    held.port = std::atoi(key.c_str() + colon + 1);
    if (core::same_socket(held, a))
      return true;
  }
  return false;
}

std::string ListenerSockets::admin_key(const config::Config& cfg) {
  return "admin " + config::socket_key(cfg.admin.address);
}

std::string ListenerSockets::control_key(const config::Config& cfg) {
  return "admin " + config::socket_key(cfg.admin.control_socket);
}

core::expected<void, std::string> ListenerSockets::inherit_from_environment() {
  const char* value = std::getenv(kEnv);
  if (!value)
    return {};
  std::string text = value;
  ::unsetenv(kEnv); // not for the processes this one starts
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    size_t space = line.rfind(' ');
    if (line.empty() || space == std::string::npos)
      return core::unexpected(std::string(kEnv) + ": malformed line '" + line + "'");
    Entry e;
    e.inherited = true;
    std::string key = line.substr(0, space);
    std::istringstream fds(line.substr(space + 1));
    std::string item;
    while (std::getline(fds, item, ',')) {
      char* end = nullptr;
      long fd = std::strtol(item.c_str(), &end, 10);
      bool udp = key.rfind("udp ", 0) == 0;
      if (item.empty() || *end || fd < 3 ||
          !(udp ? is_udp_socket(static_cast<int>(fd)) : is_listening_socket(static_cast<int>(fd))))
        return core::unexpected(std::string(kEnv) + ": " + item + " for " + key +
                                " is not a listening socket");
      ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
      e.fds.push_back(static_cast<int>(fd));
    }
    if (key.rfind("unix:", 0) == 0)
      e.unix_path = key.substr(5);
    else if (key.rfind("admin unix:", 0) == 0)
      e.unix_path = key.substr(11);
    by_key_[key] = std::move(e);
  }
  return {};
}

core::expected<void, std::string> ListenerSockets::open_for(const config::Config& cfg,
                                                            int workers) {
  std::map<std::string, Entry> opened; // by this call: committed only if all open
  auto fail = [&](std::string why) {
    for (const auto& [key, e] : opened)
      close_entry(e);
    return core::unexpected(std::move(why));
  };
  auto want = [&](const std::string& key, const core::ListenAddress& a, int count, int backlog,
                  bool reuse_port, bool udp = false) -> core::expected<void, std::string> {
    size_t have = 0;
    if (auto it = by_key_.find(key); it != by_key_.end())
      have = it->second.fds.size();
    if (auto it = opened.find(key); it != opened.end())
      have += it->second.fds.size();
    for (size_t i = have; i < static_cast<size_t>(count); ++i) {
      using core::PortSharing;
      PortSharing sharing = !reuse_port                        ? PortSharing::NONE
                            : i == 0 && !holds_tcp_covering(a) ? PortSharing::NEW_GROUP
                                                               : PortSharing::JOIN_GROUP;
      auto fd = udp ? quic::open_udp(a, i == 0) : core::open_listener(a, backlog, sharing);
      if (!fd)
        return core::unexpected(fd.error());
      if (udp)
        if (auto steered = quic::attach_steering(*fd); !steered) {
          ::close(*fd);
          return core::unexpected(steered.error());
        }
      Entry& e = opened[key];
      e.fds.push_back(*fd);
      if (a.kind == core::ListenAddress::Kind::UNIX)
        e.unix_path = a.path;
    }
    if (have < static_cast<size_t>(count))
      core::log::write(core::log::Level::INFO, core::log::Kind::GENERAL, "listening on %s%s",
                       a.text.c_str(), udp ? " (quic, UDP)" : "");
    return {};
  };
  for (const auto& l : cfg.listeners) {
    bool tcp = l.address.kind == core::ListenAddress::Kind::TCP;
    if (auto r = want(config::socket_key(l.address), l.address, tcp ? workers : 1, kBacklog, tcp);
        !r)
      return fail(r.error());
    if (l.quic.enabled)
      if (auto r = want(quic_key(l.address), l.address, workers, 0, true, true); !r)
        return fail(r.error());
  }
  if (cfg.admin.enabled)
    if (auto r = want(admin_key(cfg), cfg.admin.address, 1, kAdminBacklog, false); !r)
      return fail("admin: " + r.error());
  if (has_control_socket(cfg))
    if (auto r = want(control_key(cfg), cfg.admin.control_socket, 1, kAdminBacklog, false); !r)
      return fail("admin control_socket: " + r.error());
  for (auto& [key, e] : opened) {
    Entry& into = by_key_[key];
    into.fds.insert(into.fds.end(), e.fds.begin(), e.fds.end());
    into.unix_path = e.unix_path;
  }
  return {};
}

std::vector<int> ListenerSockets::for_worker(const core::ListenAddress& a, int worker,
                                             int workers) const {
  std::vector<int> out;
  auto it = by_key_.find(config::socket_key(a));
  if (it == by_key_.end())
    return out;
  const auto& fds = it->second.fds;
  if (a.kind == core::ListenAddress::Kind::UNIX)
    return {fds.front()};
  for (size_t i = static_cast<size_t>(worker); i < fds.size(); i += static_cast<size_t>(workers))
    out.push_back(fds[i]);
  return out;
}

std::vector<int> ListenerSockets::quic_for_worker(const core::ListenAddress& a, int worker,
                                                  int workers) const {
  std::vector<int> out;
  auto it = by_key_.find(quic_key(a));
  if (it == by_key_.end())
    return out;
  const auto& fds = it->second.fds;
  for (size_t i = static_cast<size_t>(worker); i < fds.size(); i += static_cast<size_t>(workers))
    out.push_back(fds[i]);
  return out;
}

std::string ListenerSockets::quic_key(const core::ListenAddress& a) {
  return "udp " + config::socket_key(a);
}

int ListenerSockets::admin_fd(const config::Config& cfg) const {
  if (!cfg.admin.enabled)
    return -1;
  auto it = by_key_.find(admin_key(cfg));
  return it == by_key_.end() ? -1 : it->second.fds.front();
}

int ListenerSockets::control_fd(const config::Config& cfg) const {
  if (!has_control_socket(cfg))
    return -1;
  auto it = by_key_.find(control_key(cfg));
  return it == by_key_.end() ? -1 : it->second.fds.front();
}

void ListenerSockets::close_unused(const config::Config& cfg) {
  std::set<std::string> used;
  for (const auto& l : cfg.listeners) {
    used.insert(config::socket_key(l.address));
    if (l.quic.enabled)
      used.insert(quic_key(l.address));
  }
  if (cfg.admin.enabled)
    used.insert(admin_key(cfg));
  if (has_control_socket(cfg))
    used.insert(control_key(cfg));
  for (auto it = by_key_.begin(); it != by_key_.end();) {
    if (used.count(it->first)) {
      ++it;
      continue;
    }
    core::log::write(core::log::Level::INFO, core::log::Kind::GENERAL,
                     "closing the sockets of %s: no listener has it now", it->first.c_str());
    close_entry(it->second);
    it = by_key_.erase(it);
  }
}

void ListenerSockets::stop_listening() {
  for (const auto& [key, e] : by_key_) {
    if (key.rfind("admin ", 0) == 0 || key.rfind("udp ", 0) == 0)
      continue; // QUIC connections drain over their own socket (a GOAWAY each)
    // shutdown, not close: the descriptors stay valid for the workers' acceptors until they
    // stop, and the kernel refuses connects (and resets those queued) from now on.
    for (int fd : e.fds)
      ::shutdown(fd, SHUT_RDWR);
  }
}

std::string ListenerSockets::environment_value() const {
  std::string out;
  for (const auto& [key, e] : by_key_) {
    out += key;
    for (size_t i = 0; i < e.fds.size(); ++i)
      out += (i ? "," : " ") + std::to_string(e.fds[i]);
    out += "\n";
  }
  return out;
}

std::vector<int> ListenerSockets::all_fds() const {
  std::vector<int> out;
  for (const auto& [key, e] : by_key_)
    out.insert(out.end(), e.fds.begin(), e.fds.end());
  return out;
}

} // namespace portico::proxy
