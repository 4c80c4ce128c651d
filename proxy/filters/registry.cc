// The filters, in the order a request passes them (its response passes them backwards). A new
// filter is a file in this folder defining make_NAME(const config::RouteConfig*), and its line
// here. Where it goes: before the filters whose answers it must see (gRPC is first, to map
// every local reply), after those whose edits it must see.
#include "filters/registry.h"

namespace portico::filters {

#define PORTICO_FILTERS(X)                                                                         \
  X(grpc)             /* gRPC local replies as grpc-status; grpc-timeout (HTTP/2, implicit) */     \
  X(route_timeout)    /* timeout: a deadline for the whole response */                             \
  X(retry_overrides)  /* retry_on_reset, retry_non_idempotent */                                   \
  X(redirect)         /* redirect: answered here */                                                \
  X(direct_response)  /* direct_response: answered here */                                         \
  X(prefix_rewrite)   /* prefix_rewrite */                                                         \
  X(request_headers)  /* request_headers_remove, request_headers_add */                            \
  X(response_headers) /* response_headers_remove, response_headers_add */

#define PORTICO_DECLARE(name)                                                                      \
  std::unique_ptr<routing::FilterFactory> make_##name(const config::RouteConfig* route);
PORTICO_FILTERS(PORTICO_DECLARE)

namespace {
#define PORTICO_KIND(name) routing::FilterKind{#name, make_##name},
constexpr routing::FilterKind kFilters[] = {PORTICO_FILTERS(PORTICO_KIND)};
} // namespace

routing::FilterRegistry registry() {
  return kFilters;
}

} // namespace portico::filters
