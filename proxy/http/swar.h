#pragma once
// Word-at-a-time byte tests (Hacker's Delight 6-1), exact as to the first of eight bytes that
// matches: the fast path of the scans over field values and targets.
#include <bit>
#include <cstdint>
#include <cstring>

namespace portico::http::swar {

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHighs = 0x8080808080808080ull;

// The high bit of each byte of w below n (n <= 128). A borrow can flag a byte above a flagged
// one, never below it: the lowest flag is exact.
constexpr uint64_t below_mask(uint64_t w, uint8_t n) {
  return (w - kOnes * n) & ~w & kHighs;
}
// The same for the bytes equal to b.
constexpr uint64_t equal_mask(uint64_t w, uint8_t b) {
  return below_mask(w ^ (kOnes * b), 1);
}
// The index of the first (lowest-addressed) byte a non-zero mask flags: load8 puts the byte at
// the lowest address lowest.
inline unsigned first_flagged(uint64_t mask) {
  static_assert(std::endian::native == std::endian::little);
  return static_cast<unsigned>(std::countr_zero(mask)) / 8;
}

inline uint64_t load8(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

} // namespace portico::http::swar
