#pragma once
// A route's `concurrency_limit` (filters/concurrency_limit_settings.cc reads it): requests in
// flight per key, over the process (filters/concurrency_limit.cc).
#include "core/cidr.h"
#include "http/request_key.h"
#include "limits/count_table.h"
#include "metrics/limit_counters.h"

#include <memory>
#include <string>
#include <vector>

namespace portico::filters {

struct ConcurrencyLimit {
  std::string name; // in metrics and the access log; limits of one name share their counts
  uint64_t max = 0; // requests in flight per key
  std::vector<http::KeyPart> key = {{http::KeyPart::CLIENT, {}}};
  std::vector<core::Cidr> exempt;
  bool dry_run = false;
  int status = 503; // nginx's limit_conn_status
  std::shared_ptr<limits::CountTable> table;
  metrics::LimitCounters* counters = nullptr;
};

struct ConcurrencyLimitSettings {
  static constexpr size_t kMaxLimits = 8; // per route: a request holds a place in each
  std::vector<ConcurrencyLimit> limits;
};

} // namespace portico::filters
