#include "metrics/request_counts.h"

namespace portico::metrics {

const char* to_string(AnsweredBy a) {
  switch (a) {
  case AnsweredBy::UPSTREAM: return "upstream";
  case AnsweredBy::PROXY: return "proxy";
  case AnsweredBy::NONE: return "none";
  }
  return "?";
}

void RequestCounts::inc(uint16_t listener, Protocol protocol, int status, AnsweredBy by) {
  if (status < 100 || status > 999)
    status = 0;
  uint32_t key = 1 + ((static_cast<uint32_t>(listener & 0x3ffff) << 14) |
                      (static_cast<uint32_t>(protocol) << 12) | (static_cast<uint32_t>(by) << 10) |
                      static_cast<uint32_t>(status));
  size_t i = (key * 2654435761u) >> 26; // 64 slots
  for (size_t probe = 0; probe < kSlots; ++probe, i = (i + 1) % kSlots) {
    uint32_t k = slots_[i].key.load(std::memory_order_relaxed);
    if (k == key) {
      slots_[i].n.inc();
      return;
    }
    if (k == 0) {
      // Only this worker writes: count first, then publish the key to the readers.
      slots_[i].n.inc();
      slots_[i].key.store(key, std::memory_order_release);
      return;
    }
  }
  overflow_.inc();
}

} // namespace portico::metrics
