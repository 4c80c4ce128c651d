// The monotonic clock in ngtcp2's unit (nanoseconds) and in seconds, for the figures.
#pragma once

#include <ngtcp2/ngtcp2.h>

#include <ctime>

namespace h3load {

inline ngtcp2_tstamp now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<ngtcp2_tstamp>(ts.tv_sec) * NGTCP2_SECONDS +
         static_cast<ngtcp2_tstamp>(ts.tv_nsec);
}

inline double now_s() {
  return static_cast<double>(now_ns()) / NGTCP2_SECONDS;
}

} // namespace h3load
