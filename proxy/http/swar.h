#pragma once
// Word-at-a-time byte tests (Hacker's Delight 6-1), exact as to whether any of eight bytes
// matches: the fast path of the scans over field values and targets.
#include <cstdint>
#include <cstring>

namespace portico::http::swar {

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHighs = 0x8080808080808080ull;

// Whether a byte of w is below n (n <= 128).
constexpr bool has_byte_below(uint64_t w, uint8_t n) {
  return ((w - kOnes * n) & ~w & kHighs) != 0;
}
// Whether a byte of w is b.
constexpr bool has_byte(uint64_t w, uint8_t b) {
  return has_byte_below(w ^ (kOnes * b), 1);
}

inline uint64_t load8(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

} // namespace portico::http::swar
