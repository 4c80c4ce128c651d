#pragma once
// The admin endpoint's refusals of state-changing requests (portico/admin_guard.h), by why:
// counted and read by the admin thread, kept for the process's life (a reload that changes the
// token counts on).
#include <atomic>
#include <cstdint>
#include <prometheus/metric_family.h>
#include <vector>

namespace portico::metrics {

// missing_token: a token is configured and the request carries no "Authorization: Bearer";
// wrong_token: it carries another; untrusted_peer: no token is configured and the request came
// neither over the control socket nor from loopback (where loopback may change state).
enum class AdminRefusal : uint8_t { MISSING_TOKEN, WRONG_TOKEN, UNTRUSTED_PEER };
inline constexpr const char* kAdminRefusals[] = {"missing_token", "wrong_token", "untrusted_peer"};
inline constexpr size_t kAdminRefusalCount = 3;

struct AdminRefusalCounters {
  std::atomic<uint64_t> refused[kAdminRefusalCount] = {};
  void count(AdminRefusal r) {
    refused[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
};

AdminRefusalCounters& admin_refusals();

// portico_admin_requests_refused_total{reason}, every reason (0 until one happens).
void append_admin_metrics(std::vector<prometheus::MetricFamily>& out);

} // namespace portico::metrics
