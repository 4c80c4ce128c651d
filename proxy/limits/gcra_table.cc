#include "limits/gcra_table.h"

#include "limits/named_table.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace portico::limits {

GcraTable::GcraTable(size_t slots)
    : slots_(new Slot[slots_for(slots)]), mask_(slots_for(slots) - 1) {}

std::shared_ptr<GcraTable> GcraTable::named(const std::string& name, size_t slots) {
  return named_table<GcraTable>(name, slots);
}

GcraTable::Slot& GcraTable::slot_for(uint64_t key, int64_t now_ns, bool& evicted) {
  key |= 1; // 0 marks a slot never used
  size_t at = static_cast<size_t>(key) & mask_;
  for (int attempt = 0;; ++attempt) {
    Slot* idle = nullptr;
    Slot* nearest = nullptr;
    uint64_t idle_key = 0, nearest_key = 0; // as seen: the claim fails if it changed since
    int64_t nearest_tat = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < kProbe; ++i) {
      Slot& s = slots_[(at + i) & mask_];
      uint64_t k = s.key.load(std::memory_order_acquire);
      if (k == key)
        return s;
      int64_t t = s.tat.load(std::memory_order_relaxed);
      if (k == 0 || t <= now_ns) { // no state: a full bucket, as a new key gets
        if (!idle) {
          idle = &s;
          idle_key = k;
        }
      } else if (t < nearest_tat) {
        nearest_tat = t;
        nearest = &s;
        nearest_key = k;
      }
    }
    Slot& s = idle ? *idle : *nearest;
    uint64_t old = idle ? idle_key : nearest_key;
    if (s.key.compare_exchange_strong(old, key, std::memory_order_acq_rel)) {
      if (!idle) { // a key still limited gives way: it starts afresh when it comes back
        s.tat.store(0, std::memory_order_relaxed);
        evicted = true;
      }
      return s;
    }
    if (old == key || attempt == 2)
      return s; // another worker claimed it for this key, or the probes keep changing
  }
}

GcraTable::Decision GcraTable::take(uint64_t key, int64_t now_ns, int64_t interval_ns,
                                    int64_t burst) {
  Decision d;
  Slot& s = slot_for(key, now_ns, d.evicted);
  const int64_t tolerance = burst * interval_ns;
  int64_t tat = s.tat.load(std::memory_order_relaxed);
  for (;;) {
    int64_t start = std::max(tat, now_ns);
    int64_t ahead = start - now_ns;
    if (ahead > tolerance) {
      d.ahead_ns = ahead - tolerance;
      return d;
    }
    if (s.tat.compare_exchange_weak(tat, start + interval_ns, std::memory_order_relaxed)) {
      d.allowed = true;
      d.ahead_ns = ahead;
      d.remaining = (tolerance - ahead) / interval_ns;
      return d;
    }
  }
}

} // namespace portico::limits
