#pragma once
// Marsaglia's xorshift64: a few instructions a number, no lock, not for secrets. Enough to
// spread requests over endpoints, draw a mirrored fraction and jitter a retry's backoff.
#include <cstdint>

namespace portico::core {

// The next number of state (never zero: a zero state stays zero).
inline uint64_t xorshift64(uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

// x as a fraction in [0, 1): its top 53 bits.
inline double unit_fraction(uint64_t x) {
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

} // namespace portico::core
