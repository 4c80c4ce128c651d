#pragma once
// How much misbehaviour one HTTP/2 client connection may show before it is told to calm down
// (GOAWAY ENHANCE_YOUR_CALM), as nghttpx's and Envoy's overload protections do: frames that
// cost us work and serve no request (an empty DATA frame that does not end its stream, a
// PRIORITY frame, a zero WINDOW_UPDATE, a stream the client resets before any response), and
// header fields HPACK multiplied past a block's allowance. A token bucket: a burst for clients
// that do odd things now and then, refilled at a steady rate, so that a flood ends within a
// bounded amount of work however long the connection lives.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ev.h>

namespace portico::server {

class GlitchBudget {
public:
  static constexpr double kBurst = 1000; // glitches allowed at once
  static constexpr double kRate = 100;   // ...and per second after that

  // Counts `n` glitches at `now`; false once the budget is spent.
  bool spend(ev_tstamp now, double n = 1) {
    tokens_ = std::min(kBurst, tokens_ + (now - last_) * kRate);
    last_ = now;
    tokens_ -= n;
    return tokens_ >= 0;
  }

  // HPACK lets one byte stand for a 4 KB field: 16,000 references make 64 MB of fields from
  // 16 KB, which we would copy and send upstream. What a header block decodes to past its
  // allowance is a glitch per kDecodedPerGlitch bytes. The allowance covers any browser's
  // request (16 KiB) and fields the client sent plainly (kFreePerWireByte per byte it sent),
  // so only what compression multiplies is charged, and a bomb ends early in its block.
  static constexpr size_t kFreeDecoded = 16384;
  static constexpr size_t kFreePerWireByte = 4;
  static constexpr size_t kDecodedPerGlitch = 1024;
  // A frame of a header block begins: HEADERS starts a block, CONTINUATION adds to it.
  void header_block_frame(size_t payload, bool first) {
    if (first)
      block_wire_ = block_decoded_ = block_charged_ = 0;
    block_wire_ += payload;
  }
  // One decoded field of `bytes` (RFC 9113 6.5.2's size); false once the budget is spent.
  bool decoded(size_t bytes, ev_tstamp now) {
    block_decoded_ += bytes;
    size_t free = kFreeDecoded + kFreePerWireByte * block_wire_;
    if (block_decoded_ <= free)
      return true;
    size_t due = (block_decoded_ - free) / kDecodedPerGlitch;
    if (due <= block_charged_)
      return true;
    double n = static_cast<double>(due - block_charged_);
    block_charged_ = due;
    return spend(now, n);
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
  size_t block_wire_ = 0;    // the header block's bytes on the wire so far
  size_t block_decoded_ = 0; // ...and what its fields decoded to
  size_t block_charged_ = 0; // glitches spent on it
  uint32_t excused_ = 0;
  double tokens_ = kBurst;
  ev_tstamp last_ = 0;
};

} // namespace portico::server
