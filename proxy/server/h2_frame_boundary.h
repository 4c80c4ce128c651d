#pragma once
// Whether what an HTTP/2 client has sent ends at a frame boundary. nghttp2 keeps a frame it
// has only part of (a header split across TCP segments, a payload still coming) inside its
// session and says nothing of it; a session put to sleep there would lose that part, and the
// new one would read the rest as a frame header. The client's bytes are followed here as
// frame headers and lengths, nothing more.
#include <cstddef>
#include <cstdint>

namespace portico::server {

class H2FrameBoundary {
public:
  static constexpr size_t kClientMagic = 24; // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

  // The next n bytes the client sent (the connection's, from its first one).
  void consume(const char* p, size_t n) {
    while (n > 0) {
      size_t k;
      if (magic_left_ > 0) {
        k = n < magic_left_ ? n : magic_left_;
        magic_left_ -= k;
      } else if (payload_left_ > 0) {
        k = n < payload_left_ ? n : payload_left_;
        payload_left_ -= k;
      } else {
        k = n < 9 - head_have_ ? n : 9 - head_have_;
        for (size_t i = 0; i < k && head_have_ + i < 3; ++i) // the header's 24-bit length
          length_ = length_ << 8 | static_cast<uint8_t>(p[i]);
        head_have_ += k;
        if (head_have_ == 9) {
          payload_left_ = length_;
          length_ = 0;
          head_have_ = 0;
        }
      }
      p += k;
      n -= k;
    }
  }

  // True between frames (and before the client's first byte).
  bool at_boundary() const {
    return (magic_left_ == 0 || magic_left_ == kClientMagic) && head_have_ == 0 &&
           payload_left_ == 0;
  }

private:
  size_t magic_left_ = kClientMagic;
  size_t head_have_ = 0;      // bytes of the current frame header read
  uint32_t payload_left_ = 0; // bytes of the current frame's payload still to come
  uint32_t length_ = 0;       // the current frame header's length, as far as read
};

} // namespace portico::server
