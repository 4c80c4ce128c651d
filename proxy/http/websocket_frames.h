#pragma once
// Where WebSocket frames begin and end in a tunnel's byte stream (RFC 6455 5.2), read from
// their headers as the bytes pass; payloads are skipped, never copied or unmasked. A proxy
// that says goodbye (a close frame of its own) must put it between two frames.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace portico::http {

class WebSocketFrameCursor {
public:
  // Between two frames (or before the first): a frame of ours could go here.
  bool at_boundary() const { return header_len_ == 0 && payload_left_ == 0; }
  // Reads data on. With stop_at_boundary, stops at the first frame boundary (offset 0 when
  // already at one) and returns how many bytes it read; otherwise reads all of data.
  size_t advance(std::string_view data, bool stop_at_boundary);

private:
  uint8_t header_[14];
  uint8_t header_len_ = 0;
  uint64_t payload_left_ = 0;
};

// A close frame with status code 1001 (going away): masked (with mask, as a client sends it)
// or not (as a server sends it).
std::string websocket_going_away(bool masked, uint32_t mask = 0);

} // namespace portico::http
