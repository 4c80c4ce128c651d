#include "limits/lease_table.h"

#include <algorithm>

namespace portico::limits {

LeaseTable::LeaseTable(size_t slots)
    : slots_(new Lease[std::bit_ceil(std::max(slots, kProbe))]),
      mask_(std::bit_ceil(std::max(slots, kProbe)) - 1) {}

Lease* LeaseTable::existing(uint64_t key) {
  key |= key == 0; // 0 marks a slot never used
  for (size_t i = 0; i < kProbe; ++i) {
    Lease& l = slots_[(key + i) & mask_];
    if (l.key == key)
      return &l;
  }
  return nullptr;
}

Lease* LeaseTable::find(uint64_t key, int64_t now_ns, bool& evicted) {
  key |= key == 0;
  evicted = false;
  Lease* free = nullptr;
  for (size_t i = 0; i < kProbe; ++i) {
    Lease& l = slots_[(key + i) & mask_];
    if (l.key == key)
      return &l;
    if (!free && !l.busy(now_ns))
      free = &l;
  }
  if (!free) {
    // Every probed slot is busy; one whose only claim is an unspent allowance gives it up.
    for (size_t i = 0; i < kProbe && !free; ++i) {
      Lease& l = slots_[(key + i) & mask_];
      if (!l.asking && l.waiters.empty() && now_ns >= l.empty_until_ns)
        free = &l;
    }
    if (!free)
      return nullptr;
    evicted = true;
  }
  free->reset(key);
  return free;
}

} // namespace portico::limits
