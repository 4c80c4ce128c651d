#pragma once
// The upstream error kinds, declared once: each yields its ErrorKind value, the counter's
// accessor in ErrorCounters (errors.reset()), and its `kind` label in
// portico_upstream_errors_total. The first ones are how an upstream exchange fails
// (upstream::UpstreamError is made of them, in the same order); then the three the proxy adds.
#include "core/counter.h"

#include <cstddef>
#include <cstdint>
#include <iterator>

// X(name, accessor and label)
#define PORTICO_UPSTREAM_FAILURES(X)                                                               \
  X(CONNECT_REFUSED, connect_refused)   /* refused, unreachable, no such socket: 502 */            \
  X(CONNECT_TIMEOUT, connect_timeout)   /* 504 */                                                  \
  X(RESET, reset)                       /* closed or reset before the response was whole: 502 */   \
  X(RESPONSE_TIMEOUT, response_timeout) /* no response byte in time: 504 */                        \
  X(SEND_TIMEOUT, send_timeout)         /* the request's body made no progress in time: 504 */     \
  X(PROTOCOL_ERROR, protocol_error)     /* not HTTP: 502 */                                        \
  /* the proxy is out of file descriptors or memory for a connection: 503, and the endpoint */     \
  /* is not held down (nothing is wrong with it) */                                                \
  X(LOCAL_RESOURCES, local_resources)
#define PORTICO_ERROR_KINDS(X)                                                                     \
  PORTICO_UPSTREAM_FAILURES(X)                                                                     \
  X(RETRIED, retried)                 /* requests sent again (retry_policy.h) */                   \
  X(QUEUE_TIMEOUT, queue_timeout)     /* requests whose wait for a connection ran out: 503 */      \
  X(PER_TRY_TIMEOUT, per_try_timeout) /* tries cut at [[cluster]] retry per_try_timeout: 504 */

namespace portico::metrics {

enum class ErrorKind : uint8_t {
#define PORTICO_ERROR_ENUM(name, label) name,
  PORTICO_ERROR_KINDS(PORTICO_ERROR_ENUM)
#undef PORTICO_ERROR_ENUM
};

inline constexpr const char* kErrorKindNames[] = {
#define PORTICO_ERROR_NAME(name, label) #label,
    PORTICO_ERROR_KINDS(PORTICO_ERROR_NAME)
#undef PORTICO_ERROR_NAME
};
inline constexpr size_t kErrorKinds = std::size(kErrorKindNames);

// One counter per kind, for one cluster in one worker's shard.
class ErrorCounters {
public:
  core::Counter& operator[](ErrorKind k) { return counters_[static_cast<size_t>(k)]; }
  const core::Counter& operator[](ErrorKind k) const { return counters_[static_cast<size_t>(k)]; }
  // By position, for the exposition's walk over kErrorKindNames.
  const core::Counter& operator[](size_t i) const { return counters_[i]; }
#define PORTICO_ERROR_ACCESSOR(name, label)                                                        \
  core::Counter& label() {                                                                         \
    return (*this)[ErrorKind::name];                                                               \
  }                                                                                                \
  const core::Counter& label() const {                                                             \
    return (*this)[ErrorKind::name];                                                               \
  }
  PORTICO_ERROR_KINDS(PORTICO_ERROR_ACCESSOR)
#undef PORTICO_ERROR_ACCESSOR

private:
  core::Counter counters_[kErrorKinds];
};

} // namespace portico::metrics
