// The filters, in the order a request passes them (its response passes them backwards). A new
// filter is a file in this folder defining make_NAME(const config::RouteConfig*,
// metrics::WorkerMetrics&), and its line here: X(NAME, BUILT_IN) when it reads built-in
// [[route]] keys only, X(NAME, OWN_KEY) when its folder also defines `const
// config::RouteSettingsReader settings_NAME` for a key of its own (config/route_settings.h).
// Where it goes: before the filters whose answers it must see (gRPC first of all, to map every
// local reply, a rate limit's refusal too; compression early, to compress what leaves), after
// those whose edits it must see. Rate limits come next: a refused request costs nothing more.
// Then the cache: it keys the request as the client sent it, stores what leaves (compressed
// once, not at every hit), and answers a hit past every other filter.
#include "filters/registry.h"

namespace portico::filters {

#define PORTICO_FILTERS(X)                                                                         \
  X(grpc, BUILT_IN)      /* gRPC: every local reply as grpc-status; grpc-timeout (HTTP/2) */       \
  X(rate_limit, OWN_KEY) /* rate_limit: early; a refusal costs nothing more */                     \
  X(concurrency_limit, OWN_KEY) /* concurrency_limit: requests in flight per key */                \
  X(forward_auth, OWN_KEY)      /* forward_auth: asks an internal route first */                   \
  X(cache, OWN_KEY)             /* cache: stores what leaves, keys what comes */                   \
  X(compress, OWN_KEY)         /* compress: compresses what leaves (before the cache stores it) */ \
  X(route_timeout, BUILT_IN)   /* timeout: a deadline for the whole response */                    \
  X(retry_overrides, BUILT_IN) /* retry_on_reset, retry_non_idempotent */                          \
  X(redirect, BUILT_IN)        /* redirect: answered here */                                       \
  X(direct_response, BUILT_IN) /* direct_response: answered here */                                \
  X(prefix_rewrite, BUILT_IN)  /* prefix_rewrite */                                                \
  X(request_headers, BUILT_IN) /* request_headers_remove, request_headers_add */                   \
  X(response_headers, BUILT_IN) /* response_headers_remove, response_headers_add */                \
  X(mirror, BUILT_IN)           /* mirror: a copy of the request as it goes upstream */            \
  X(static_files, OWN_KEY)      /* static: answered from files, after every edit above */

#define PORTICO_SETTINGS_DECL_BUILT_IN(name)
#define PORTICO_SETTINGS_DECL_OWN_KEY(name)                                                        \
  extern const config::RouteSettingsReader settings_##name;
#define PORTICO_SETTINGS_BUILT_IN(name) nullptr
#define PORTICO_SETTINGS_OWN_KEY(name) &settings_##name

#define PORTICO_DECLARE(name, keys)                                                                \
  std::unique_ptr<routing::FilterFactory> make_##name(const config::RouteConfig* route,            \
                                                      metrics::WorkerMetrics& metrics);            \
  PORTICO_SETTINGS_DECL_##keys(name)
PORTICO_FILTERS(PORTICO_DECLARE)

namespace {
#define PORTICO_KIND(name, keys)                                                                   \
  routing::FilterKind{#name, make_##name, PORTICO_SETTINGS_##keys(name)},
constexpr routing::FilterKind kFilters[] = {PORTICO_FILTERS(PORTICO_KIND)};
} // namespace

routing::FilterRegistry registry() {
  return kFilters;
}

std::vector<config::RouteSettingsReader> route_settings_of(routing::FilterRegistry kinds) {
  std::vector<config::RouteSettingsReader> out;
  for (const auto& kind : kinds)
    if (kind.settings)
      out.push_back(*kind.settings);
  return out;
}

config::RouteSettingsReaders route_settings() {
  static const std::vector<config::RouteSettingsReader> readers = route_settings_of(registry());
  return readers;
}

} // namespace portico::filters
