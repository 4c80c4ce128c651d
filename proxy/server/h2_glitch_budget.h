#pragma once
// How much misbehaviour one HTTP/2 client connection may show before it is told to calm down
// (GOAWAY ENHANCE_YOUR_CALM), as nghttpx's and Envoy's overload protections do: frames that
// cost us work and serve no request (an empty DATA frame that does not end its stream, a
// PRIORITY frame, a zero WINDOW_UPDATE, a stream the client resets before any response). A
// token bucket: a burst for clients that do odd things now and then, refilled at a steady rate,
// so that a flood ends within a bounded amount of work however long the connection lives.
#include <algorithm>
#include <cstdint>
#include <ev.h>

namespace portico::server {

class GlitchBudget {
public:
  static constexpr double kBurst = 1000; // glitches allowed at once
  static constexpr double kRate = 100;   // ...and per second after that

  // Counts one glitch at `now`; false once the budget is spent.
  bool spend(ev_tstamp now) {
    tokens_ = std::min(kBurst, tokens_ + (now - last_) * kRate);
    last_ = now;
    tokens_ -= 1;
    return tokens_ >= 0;
  }

  // RFC 9113 5.1: a WINDOW_UPDATE or RST_STREAM may still come for a stream a little after it
  // closed (HAProxy's h2 backend sends a WINDOW_UPDATE for every response it has read). Each
  // closed stream excuses two such frames, up to kMaxExcused held at once; beyond that they
  // are glitches like any other frame for a stream that is not open.
  static constexpr uint32_t kExcusedPerStream = 2;
  static constexpr uint32_t kMaxExcused = 512;
  void stream_closed() { excused_ = std::min(kMaxExcused, excused_ + kExcusedPerStream); }
  // A frame for a stream that is not open: excused, or spent from the budget as spend() does.
  bool spend_on_closed_stream(ev_tstamp now) {
    if (excused_ > 0) {
      --excused_;
      return true;
    }
    return spend(now);
  }

private:
  uint32_t excused_ = 0;
  double tokens_ = kBurst;
  ev_tstamp last_ = 0;
};

} // namespace portico::server
