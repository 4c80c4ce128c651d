// A route's `concurrency_limit` (nginx's limit_conn, which counts requests being processed):
// each request takes a place under its key in the table the workers share
// (limits/count_table.h) for as long as its exchange lasts; a key at its max is answered 503
// (or `status`). A dry run only counts.
#include "filters/concurrency_limit_settings.h"
#include "filters/route_factory.h"
#include "routing/filter.h"

#include <array>

namespace portico::filters {

namespace {

using routing::FilterStatus;

class ConcurrencyLimitFilter final : public routing::Filter {
public:
  ConcurrencyLimitFilter(const ConcurrencyLimitSettings& s, std::string_view route)
      : settings_(s), route_(route) {}
  ~ConcurrencyLimitFilter() override { release(); }

private:
  FilterStatus on_request_head(http::RequestHead& req) override {
    thread_local std::string key;
    std::string_view client = exchange_options().client;
    for (const auto& l : settings_.limits) {
      if (!l.exempt.empty() && core::in_any(l.exempt, client))
        continue;
      if (!http::build_key(l.key, req, client, route_, key))
        continue;
      auto ticket = l.table->acquire(std::hash<std::string_view>{}(key), l.max);
      if (ticket) {
        held_[held_count_++] = {l.table.get(), ticket};
        l.counters->count(metrics::LimitResult::ALLOWED);
        continue;
      }
      if (l.dry_run) {
        l.counters->count(metrics::LimitResult::DRY_RUN);
        continue;
      }
      l.counters->count(metrics::LimitResult::LIMITED);
      release(); // what it took under the other limits goes back at once
      char status[8];
      std::snprintf(status, sizeof status, " %d", l.status);
      exchange_options().limit = exchange().arena().join({l.name, status});
      respond(routing::LocalReply{l.status, "text/plain", "Too many requests in progress\n"});
      return FilterStatus::STOP;
    }
    return FilterStatus::CONTINUE;
  }

  void on_exchange_close() override { release(); }

  void release() {
    for (size_t i = 0; i < held_count_; ++i)
      held_[i].first->release(held_[i].second);
    held_count_ = 0;
  }

  const ConcurrencyLimitSettings& settings_;
  std::string_view route_;
  std::array<std::pair<limits::CountTable*, limits::CountTable::Ticket>,
             ConcurrencyLimitSettings::kMaxLimits>
      held_{};
  size_t held_count_ = 0;
};

class ConcurrencyLimitFactory final : public routing::FilterFactory {
public:
  ConcurrencyLimitFactory(const ConcurrencyLimitSettings& s, const config::RouteConfig& r)
      : settings_(s), route_(r.label) {}
  routing::Filter* create(const server::Exchange&) const override {
    return new ConcurrencyLimitFilter(settings_, route_);
  }

private:
  const ConcurrencyLimitSettings& settings_;
  std::string_view route_;
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_concurrency_limit(const config::RouteConfig* r,
                                                               metrics::WorkerMetrics&) {
  const auto* s = r ? r->settings_for<ConcurrencyLimitSettings>("concurrency_limit") : nullptr;
  if (!s)
    return nullptr;
  return std::make_unique<ConcurrencyLimitFactory>(*s, *r);
}

} // namespace portico::filters
