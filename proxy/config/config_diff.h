#pragma once
// What a reload (SIGHUP) can carry over from the running configuration to the next one, and
// what it cannot apply while running.
#include "config/config.h"

#include <string>
#include <vector>

namespace portico::config {

// For each cluster of next, the index of the same cluster in old (same name, every setting
// equal), whose pools and metrics a reload keeps; -1 for a new or changed cluster.
std::vector<int> kept_clusters(const Config& old, const Config& next);

// For each series group of next's routes (Config::route_stats, the unmatched requests' last),
// the index of the one in old with the same route and cluster labels, whose counters a reload
// keeps going; -1 for a new one. All -1 when the listeners changed, since requests are counted
// by listener.
std::vector<int> kept_routes(const Config& old, const Config& next);

// Settings that shape the process itself (its threads, the admin sockets, the histogram
// layout, the error log file, the pid file): a reload keeps the running values and says so,
// one line per setting; a restart or a binary upgrade (USR2) applies them. Who may change
// state through the admin endpoint ([admin] token_file, allow_loopback_control) is not one:
// a reload applies it.
std::vector<std::string> restart_only_changes(const Config& old, const Config& next);

// The identity of a listening socket across configurations: a reload or an upgrade keeps the
// socket of a listener whose key stays.
std::string socket_key(const core::ListenAddress& a);

} // namespace portico::config
