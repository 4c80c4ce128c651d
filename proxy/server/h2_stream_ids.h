#pragma once
// The stream ids an HTTP/2 client has opened, as far as RFC 9113 5.1.1 needs them: a new
// stream's id must be higher than every id before it, and an id the client skipped is closed
// for good. nghttp2 ignores a HEADERS frame on a skipped id (it cannot tell it from trailers
// sent on a stream it reset); this tells them apart, so that one is the connection error
// PROTOCOL_ERROR the RFC asks for.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace portico::server {

class ClientStreamIds {
public:
  // Remembers this many runs of skipped ids; older ones are forgotten (and then left to
  // nghttp2, which ignores such a HEADERS frame): a client that skips ids often is rare.
  static constexpr size_t kMaxGaps = 32;

  // Stream 1 came by "Upgrade: h2c", not by a HEADERS frame.
  void opened_by_upgrade() { highest_ = 1; }

  // The highest id the client opened, or -1.
  int32_t highest() const { return highest_; }

  // A HEADERS frame on client stream `id` (odd): false when the id was skipped.
  bool on_headers(int32_t id) {
    if (id > highest_) {
      if (id > highest_ + 2) {
        if (gaps_.size() == kMaxGaps)
          gaps_.erase(gaps_.begin());
        gaps_.push_back({highest_ + 2, id - 2});
      }
      highest_ = id;
      return true;
    }
    for (const Gap& g : gaps_)
      if (id >= g.first && id <= g.last)
        return false;
    return true; // a stream opened before: trailers, or a frame nghttp2 judges
  }

private:
  struct Gap {
    int32_t first, last; // odd ids, inclusive
  };
  int32_t highest_ = -1;
  std::vector<Gap> gaps_;
};

} // namespace portico::server
