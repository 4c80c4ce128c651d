#pragma once
// The master's /metrics: every worker slot summed, and what the master knows of its workers,
// as Prometheus text built with prometheus-cpp's TextSerializer.
#include "backend_metrics.h"

#include <cstdint>
#include <string>

namespace portico::backend {

// Why a worker was replaced: the `cause` label's fixed set. A worker retired by TTOU, or
// stopped with the master, is not replaced and is not counted.
enum class RestartCause : uint8_t {
  CRASH,        // killed by a signal, or exited with a code other than "retired"
  MAX_REQUESTS, // retired itself after --max-requests
  HUP,          // replaced by a graceful restart
  COUNT,
};
inline constexpr size_t kRestartCauses = static_cast<size_t>(RestartCause::COUNT);
const char* to_string(RestartCause c);

// The master's own counts, kept in its memory.
struct SupervisionStats {
  int workers_configured = 0;
  int workers_busy = 0; // live workers with a request in flight
  int workers_idle = 0;
  uint64_t restarts[kRestartCauses] = {};
};

std::string expose(const BackendMetrics& metrics, const SupervisionStats& stats);

} // namespace portico::backend
