#pragma once
// A route's `forward_auth` (filters/forward_auth_settings.cc reads it): ask first, through an
// internal route of the proxy's own, whether the request may go on (filters/forward_auth.cc).
#include "metrics/limit_counters.h"

#include <string>
#include <vector>

namespace portico::filters {

struct ForwardAuthSettings {
  std::string name; // in metrics and the access log
  std::string path; // the auth request's target: a route with `internal = true` takes it
  std::vector<std::string> headers = {"authorization", "cookie"}; // sent along, lower case
  std::vector<std::string> copy; // the auth's answer fields put on the upstream request
  double timeout = 5;            // seconds for the auth's whole answer
  int error_status = 503;        // an answer other than 2xx, 3xx, 401, 403; or none
  double cache = 0;              // seconds a 2xx is remembered for the same question (0: never)
  size_t cache_size = 10000;     // questions remembered per worker
  metrics::AuthCounters* counters = nullptr;
};

} // namespace portico::filters
