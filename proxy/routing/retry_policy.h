#pragma once
// When a failed request may be sent to an upstream again (RFC 9110 9.2.2, and nginx's
// proxy_next_upstream without non_idempotent): only when it provably never reached the
// application, or its method is idempotent and not one response byte came back; and only
// while the proxy still holds its whole body. Anything else is an honest 502: a request is
// never applied twice by the proxy's doing.
#include "metrics/worker_metrics.h"
#include "upstream/upstream_stream_listener.h"

#include <optional>
#include <string_view>

namespace portico::routing {

// Why a request was sent again, as portico_upstream_retries_total{reason} labels it.
enum class RetryReason : uint8_t {
  CONNECT_FAILED, // the connect failed: another endpoint gets it
  REFUSED_STREAM, // h2c: refused, or above a GOAWAY's last-stream-id
  IDEMPOTENT,     // GET, HEAD, OPTIONS, TRACE, PUT, DELETE; no response byte came back
  NON_IDEMPOTENT, // the same for any method, with retry_non_idempotent = true
  COUNT,
};
static_assert(metrics::kRetryReasonCount == static_cast<size_t>(RetryReason::COUNT));

inline bool is_idempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "TRACE" ||
         method == "PUT" || method == "DELETE";
}

struct RetryPolicy {
  bool retry_unanswered = true;      // [[cluster]] retry_on_reset
  bool retry_non_idempotent = false; // [[cluster]] retry_non_idempotent
};

// The reason to send the request again, or none. body_held: every body byte that left for the
// upstream is still in the proxy (so far, for a body the client is still sending).
inline std::optional<RetryReason> retry_reason(const RetryPolicy& policy, upstream::UpstreamError e,
                                               upstream::Delivery delivery, std::string_view method,
                                               bool body_held) {
  if (!body_held || e == upstream::UpstreamError::LOCAL_RESOURCES)
    return std::nullopt; // trying again at once would meet the same shortage
  switch (delivery) {
  case upstream::Delivery::NOT_DELIVERED:
    return upstream::is_connect_failure(e) ? RetryReason::CONNECT_FAILED
                                           : RetryReason::REFUSED_STREAM;
  case upstream::Delivery::UNANSWERED:
    if (!policy.retry_unanswered)
      return std::nullopt;
    if (is_idempotent(method))
      return RetryReason::IDEMPOTENT;
    if (policy.retry_non_idempotent)
      return RetryReason::NON_IDEMPOTENT;
    return std::nullopt;
  case upstream::Delivery::ANSWERED: return std::nullopt;
  }
  return std::nullopt;
}

} // namespace portico::routing
