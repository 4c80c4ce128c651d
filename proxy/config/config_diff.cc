#include "config/config_diff.h"

#include <unordered_map>

namespace portico::config {

std::vector<int> kept_clusters(const Config& old, const Config& next) {
  std::vector<int> kept;
  for (const auto& c : next.clusters) {
    int found = -1;
    for (size_t i = 0; i < old.clusters.size(); ++i)
      if (old.clusters[i] == c)
        found = static_cast<int>(i);
    kept.push_back(found);
  }
  return kept;
}

std::vector<int> kept_routes(const Config& old, const Config& next) {
  std::vector<int> kept(next.route_stats.size(), -1);
  bool same_listeners = old.listeners.size() == next.listeners.size();
  for (size_t i = 0; same_listeners && i < old.listeners.size(); ++i)
    same_listeners = socket_key(old.listeners[i].address) == socket_key(next.listeners[i].address);
  if (!same_listeners)
    return kept;
  // Labels are unique per cluster, so one series never counts for two.
  std::unordered_map<std::string, int> was;
  for (size_t o = 0; o < old.route_stats.size(); ++o)
    was.emplace(old.route_stats[o].label + '\0' + old.route_stats[o].cluster, static_cast<int>(o));
  for (size_t n = 0; n < next.route_stats.size(); ++n)
    if (auto at = was.find(next.route_stats[n].label + '\0' + next.route_stats[n].cluster);
        at != was.end())
      kept[n] = at->second;
  return kept;
}

namespace {

template <typename T>
void note(std::vector<std::string>& out, const char* name, const T& was, const T& now) {
  if (!(was == now))
    out.push_back(std::string(name) + " changed");
}

} // namespace

std::vector<std::string> restart_only_changes(const Config& old, const Config& next) {
  std::vector<std::string> out;
  note(out, "[server] workers", old.server.workers, next.server.workers);
  note(out, "[server] pid_file", old.server.pid_file, next.server.pid_file);
  note(out, "[server] resolvers", old.server.resolvers, next.server.resolvers);
  note(out, "[admin] enabled", old.admin.enabled, next.admin.enabled);
  note(out, "[admin] address", socket_key(old.admin.address), socket_key(next.admin.address));
  note(out, "[admin] control_socket", old.admin.control_socket.path,
       next.admin.control_socket.path);
  note(out, "[admin] control_socket_mode", old.admin.control_socket.mode,
       next.admin.control_socket.mode);
  note(out, "[admin] control_socket_owner", old.admin.control_socket_owner,
       next.admin.control_socket_owner);
  note(out, "[metrics] enabled", old.metrics.enabled, next.metrics.enabled);
  note(out, "[metrics] buckets", old.metrics.buckets, next.metrics.buckets);
  note(out, "[log] file", old.log.file, next.log.file);
  return out;
}

std::string socket_key(const core::ListenAddress& a) {
  if (a.kind == core::ListenAddress::Kind::UNIX)
    return "unix:" + a.path;
  return "tcp:" + a.host + ":" + std::to_string(a.port);
}

} // namespace portico::config
