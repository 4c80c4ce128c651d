#pragma once
// What an exchange needs of the route it matched, made once per route by each worker's Router
// (and one more for requests no route matched), and what every exchange of that router shares.
#include "core/deferred_queue.h"
#include "core/intrusive_list.h"
#include "metrics/worker_metrics.h"
#include "routing/filter.h"
#include "upstream/request_writer.h"

#include <memory>
#include <vector>

namespace portico::upstream {
class Cluster;
}

namespace portico::routing {

struct Route {
  upstream::Cluster* cluster = nullptr;     // null: the route's filters answer (a redirect)
  metrics::RouteMetrics* metrics = nullptr; // the route's, or the no-route one
  std::string_view label = "none";          // config::RouteConfig::label, for the access log
  std::vector<std::unique_ptr<FilterFactory>> filters; // in run order (filters/registry.cc)
  bool http1_filters = false; // one of them makes filters for HTTP/1 requests too
  bool may_filter(const server::Exchange& ex) const {
    return ex.request().framed() ? !filters.empty() : http1_filters;
  }
};

// An exchange whose client went while a filter keeps its response (FilterChain::keep_response):
// it reads on with no client, and its router ends it if it still does when the router goes,
// before the routes and clusters it reads through.
class KeptExchange {
public:
  // Ends at once: off its upstream, its filters closed, disposed of.
  virtual void abandon() = 0;
  core::ListHook<KeptExchange> kept_hook;

protected:
  ~KeptExchange() = default;
};
using KeptExchanges = core::IntrusiveList<KeptExchange, &KeptExchange::kept_hook>;

struct RouterContext {
  const upstream::ForwardingOptions* fwd = nullptr;
  core::DeferredQueue* deferred = nullptr; // exchanges are destroyed through it
  uint32_t* in_flight = nullptr;           // exchanges alive, or null
  KeptExchanges* kept = nullptr;           // null: no exchange outlives its client
};

} // namespace portico::routing
