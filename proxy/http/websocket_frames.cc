#include "http/websocket_frames.h"

#include <algorithm>

namespace portico::http {

namespace {

// The header's length: 2 bytes, then 2 or 8 of extended length, then 4 of mask key.
size_t header_size(const uint8_t* h) {
  size_t n = 2;
  uint8_t len7 = h[1] & 0x7f;
  if (len7 == 126)
    n += 2;
  else if (len7 == 127)
    n += 8;
  if (h[1] & 0x80)
    n += 4;
  return n;
}

uint64_t payload_size(const uint8_t* h) {
  uint8_t len7 = h[1] & 0x7f;
  if (len7 < 126)
    return len7;
  int bytes = len7 == 126 ? 2 : 8;
  uint64_t n = 0;
  for (int i = 0; i < bytes; ++i)
    n = (n << 8) | h[2 + i];
  return n;
}

} // namespace

size_t WebSocketFrameCursor::advance(std::string_view data, bool stop_at_boundary) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t i = 0;
  while (i < data.size()) {
    if (stop_at_boundary && at_boundary())
      return i;
    if (payload_left_ > 0) {
      uint64_t take = std::min<uint64_t>(payload_left_, data.size() - i);
      payload_left_ -= take;
      i += static_cast<size_t>(take);
      continue;
    }
    header_[header_len_++] = p[i++];
    if (header_len_ < 2 || header_len_ < header_size(header_))
      continue;
    payload_left_ = payload_size(header_);
    header_len_ = 0;
  }
  return i;
}

std::string websocket_going_away(bool masked, uint32_t mask) {
  const uint8_t code[2] = {0x03, 0xe9}; // 1001
  std::string f;
  f.push_back(static_cast<char>(0x88)); // FIN, close
  f.push_back(static_cast<char>(masked ? 0x82 : 0x02));
  if (!masked) {
    f.append(reinterpret_cast<const char*>(code), 2);
    return f;
  }
  const uint8_t key[4] = {static_cast<uint8_t>(mask >> 24), static_cast<uint8_t>(mask >> 16),
                          static_cast<uint8_t>(mask >> 8), static_cast<uint8_t>(mask)};
  f.append(reinterpret_cast<const char*>(key), 4);
  for (int i = 0; i < 2; ++i)
    f.push_back(static_cast<char>(code[i] ^ key[i]));
  return f;
}

} // namespace portico::http
