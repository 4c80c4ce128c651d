#pragma once
// The bytes a field value may hold, and the scan over them that both request readers use: the
// HTTP/1 strict scanner and the HTTP/2 request rules (whose unit test holds this class to
// nghttp2's, byte by byte).
#include "http/swar.h"

#include <array>

namespace portico::http {

// field-vchar, SP and HTAB (RFC 9110 5.5), obs-text included: anything but CTLs and DEL.
inline constexpr std::array<bool, 256> kFieldValueBytes = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c)
    t[c] = c == '\t' || (c >= 0x20 && c != 0x7f);
  return t;
}();

// Where the run of field-value bytes from p stops (end if it does not). Values are most of a
// head's bytes: eight at a time, and the word holding the stop (a line's CR) says where it is;
// byte by byte only in the last seven bytes of the buffer.
inline const unsigned char* skip_field_value(const unsigned char* p, const unsigned char* end) {
  while (end - p >= 8) {
    uint64_t w = swar::load8(p);
    // A tab is below SP but allowed: one flagged is stepped over, and the scan goes on after it.
    if (uint64_t stop = swar::below_mask(w, 0x20) | swar::equal_mask(w, 0x7f)) {
      p += swar::first_flagged(stop);
      if (*p != '\t')
        return p;
      ++p;
      continue;
    }
    p += 8;
  }
  while (p < end && kFieldValueBytes[*p])
    ++p;
  return p;
}

} // namespace portico::http
