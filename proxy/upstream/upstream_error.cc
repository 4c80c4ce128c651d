#include "upstream/upstream_error.h"

#include "metrics/worker_metrics.h"

#include <string_view>

namespace portico::upstream {

static_assert(static_cast<size_t>(UpstreamError::LOCAL_RESOURCES) + 1 == metrics::kErrorRetried,
              "UpstreamError's values are the first metric error kinds, in order");
static_assert(std::string_view(metrics::kUpstreamErrorKinds[metrics::kErrorQueueTimeout]) ==
              "queue_timeout");

const char* to_string(UpstreamError e) {
  switch (e) {
  case UpstreamError::CONNECT_REFUSED: return "connect_refused";
  case UpstreamError::CONNECT_TIMEOUT: return "connect_timeout";
  case UpstreamError::RESET: return "reset";
  case UpstreamError::RESPONSE_TIMEOUT: return "response_timeout";
  case UpstreamError::PROTOCOL_ERROR: return "protocol_error";
  case UpstreamError::LOCAL_RESOURCES: return "local_resources";
  }
  return "unknown";
}

} // namespace portico::upstream
