// retry_reason: a request goes upstream again only when that cannot apply it twice.
#include "routing/retry_policy.h"

#include <gtest/gtest.h>

namespace portico::routing {
namespace {
using namespace portico::upstream;

constexpr RetryPolicy kDefault{};

TEST(RetryPolicy, NotDeliveredIsRetriedForAnyMethod) {
  EXPECT_EQ(
      retry_reason(kDefault, UpstreamError::CONNECT_REFUSED, Delivery::NOT_DELIVERED, "POST", true),
      RetryReason::CONNECT_FAILED);
  EXPECT_EQ(retry_reason(kDefault, UpstreamError::CONNECT_TIMEOUT, Delivery::NOT_DELIVERED, "PATCH",
                         true),
            RetryReason::CONNECT_FAILED);
  EXPECT_EQ(retry_reason(kDefault, UpstreamError::RESET, Delivery::NOT_DELIVERED, "POST", true),
            RetryReason::REFUSED_STREAM);
}

TEST(RetryPolicy, UnansweredIsRetriedOnlyWhenIdempotent) {
  for (const char* m : {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
    EXPECT_EQ(retry_reason(kDefault, UpstreamError::RESET, Delivery::UNANSWERED, m, true),
              RetryReason::IDEMPOTENT)
        << m;
  for (const char* m : {"POST", "PATCH", "CONNECT", "get", "PROPFIND"})
    EXPECT_FALSE(retry_reason(kDefault, UpstreamError::RESET, Delivery::UNANSWERED, m, true)) << m;
}

TEST(RetryPolicy, NonIdempotentOptIn) {
  RetryPolicy p{.retry_non_idempotent = true};
  EXPECT_EQ(retry_reason(p, UpstreamError::RESET, Delivery::UNANSWERED, "POST", true),
            RetryReason::NON_IDEMPOTENT);
  RetryPolicy off{.retry_unanswered = false, .retry_non_idempotent = true};
  EXPECT_FALSE(retry_reason(off, UpstreamError::RESET, Delivery::UNANSWERED, "GET", true));
  // retry_on_reset = false still lets a failed connect go elsewhere: nothing was sent.
  EXPECT_EQ(
      retry_reason(off, UpstreamError::CONNECT_REFUSED, Delivery::NOT_DELIVERED, "POST", true),
      RetryReason::CONNECT_FAILED);
}

TEST(RetryPolicy, AnsweredOrBodyNotHeldIsNeverRetried) {
  RetryPolicy all{.retry_non_idempotent = true};
  EXPECT_FALSE(retry_reason(all, UpstreamError::RESET, Delivery::ANSWERED, "GET", true));
  EXPECT_FALSE(retry_reason(all, UpstreamError::RESPONSE_TIMEOUT, Delivery::ANSWERED, "GET", true));
  EXPECT_FALSE(retry_reason(all, UpstreamError::RESET, Delivery::UNANSWERED, "PUT", false));
  EXPECT_FALSE(
      retry_reason(all, UpstreamError::CONNECT_REFUSED, Delivery::NOT_DELIVERED, "GET", false));
}

} // namespace
} // namespace portico::routing
