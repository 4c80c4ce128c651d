#pragma once
// What one fuzz input asks of the wire harness: a first byte choosing the upstream's protocol,
// then steps until the input ends. Each step is an opcode byte (its low 3 bits the kind, the
// rest an argument) and, for writes, a 16-bit little-endian length and that many bytes (cut
// short at the input's end). tests/fuzz/make_wire_seeds.py writes seeds in this form.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace portico::fuzz {

enum class StepKind : uint8_t {
  CLIENT_WRITE = 0,
  CLIENT_WRITE_MORE = 1, // the same: writes are most of what matters
  UPSTREAM_WRITE = 2,    // to upstream connection arg % open ones (queued if none yet)
  CLOCK = 3,             // the next byte x 0.25 s pass
  CLIENT_SHUT_WRITE = 4, // the client half-closes
  UPSTREAM_CLOSE = 5,    // upstream connection arg % open ones closes
  UPSTREAM_SHUT_WRITE = 6,
  CLIENT_READING = 7, // the client stops reading (arg odd) or reads again (arg even)
};

struct Step {
  StepKind kind;
  uint8_t arg;          // the opcode's high 5 bits
  std::string_view out; // bytes to write (CLIENT_WRITE, UPSTREAM_WRITE)
  double seconds = 0;   // CLOCK
};

class Script {
public:
  Script(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool h2c_upstream() {
    if (p_ == end_)
      return false;
    return (*p_++ & 1) != 0;
  }
  bool next(Step& s) {
    if (p_ == end_)
      return false;
    uint8_t op = *p_++;
    s.kind = static_cast<StepKind>(op & 7);
    s.arg = static_cast<uint8_t>(op >> 3);
    s.out = {};
    s.seconds = 0;
    switch (s.kind) {
    case StepKind::CLIENT_WRITE:
    case StepKind::CLIENT_WRITE_MORE:
    case StepKind::UPSTREAM_WRITE: {
      size_t n = byte() | static_cast<size_t>(byte()) << 8;
      n = n < static_cast<size_t>(end_ - p_) ? n : static_cast<size_t>(end_ - p_);
      s.out = {reinterpret_cast<const char*>(p_), n};
      p_ += n;
      break;
    }
    case StepKind::CLOCK: s.seconds = byte() * 0.25; break;
    default: break;
    }
    return true;
  }

private:
  uint8_t byte() { return p_ == end_ ? 0 : *p_++; }
  const uint8_t* p_;
  const uint8_t* end_;
};

} // namespace portico::fuzz
