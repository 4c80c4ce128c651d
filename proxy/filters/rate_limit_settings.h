#pragma once
// A route's `rate_limit` (filters/rate_limit_settings.cc reads it): one limit, or a list that
// must all let a request through (filters/rate_limit.cc).
#include "core/cidr.h"
#include "http/request_key.h"
#include "limits/gcra_table.h"
#include "limits/shared_limiter.h"
#include "metrics/limit_counters.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace portico::filters {

struct RateLimit {
  std::string name;        // in metrics, the access log and RateLimit-Policy
  int64_t interval_ns = 0; // one request per interval: the rate
  int64_t per_window = 0;  // the rate as given, in requests per window_s (for the fields)
  int64_t window_s = 1;    // 1 for r/s, 60 for r/m
  int64_t burst = 0;       // requests beyond the rate let through (queued, or at once)
  int64_t delay = 0;       // of those, how many pass at once; the rest wait their turn
  bool nodelay = false;    // every request within the burst passes at once
  std::vector<http::KeyPart> key = {{http::KeyPart::CLIENT, {}}};
  std::vector<core::Cidr> exempt; // clients never limited
  bool dry_run = false;           // only counted: nothing is refused or delayed
  int status = 429;
  bool headers = false; // RateLimit fields on every response, not only on refusals
  std::shared_ptr<limits::GcraTable> table; // a local limit's
  // A shared limit's: its budget is in Redis, one for every instance (limits/shared_limiter.h).
  std::shared_ptr<const limits::SharedSettings> shared;
  metrics::LimitCounters* counters = nullptr;
};

struct RateLimitSettings {
  std::vector<RateLimit> limits;
};

} // namespace portico::filters
