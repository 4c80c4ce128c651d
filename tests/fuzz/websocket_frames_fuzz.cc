// The frame boundaries of a WebSocket tunnel (http/websocket_frames.h), read from any bytes in
// any chunks: never a crash, the same boundaries however the bytes are split, and a stop at a
// boundary is at one. The first byte picks the chunk size.
#include "http/websocket_frames.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

using namespace portico;

namespace {

// Every position after which the cursor stands between frames, fed in chunks of `chunk`.
std::vector<size_t> boundaries(std::string_view in, size_t chunk) {
  http::WebSocketFrameCursor c;
  std::vector<size_t> out;
  for (size_t pos = 0; pos < in.size(); pos += chunk) {
    std::string_view piece = in.substr(pos, chunk);
    size_t done = 0;
    while (done < piece.size()) {
      // Past the boundary we may stand on (every frame's header has two bytes or more, so
      // one byte never crosses another), then to the next one in this piece.
      done += c.advance(piece.substr(done, 1), false);
      size_t n = c.advance(piece.substr(done), true);
      if (n > piece.size() - done)
        abort();
      done += n;
      if (done < piece.size() && !c.at_boundary())
        abort(); // stopped short, but not at a boundary
      if (c.at_boundary() && (out.empty() || out.back() != pos + done))
        out.push_back(pos + done);
    }
  }
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1)
    return 0;
  size_t chunk = 1 + data[0] % 64;
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  if (boundaries(in, chunk) != boundaries(in, in.size() ? in.size() : 1))
    abort();
  return 0;
}
