#include "limits/count_table.h"

#include "limits/named_table.h"

#include <algorithm>
#include <bit>

namespace portico::limits {

namespace {
constexpr uint64_t kCountMask = CountTable::kMaxCount;
} // namespace

CountTable::CountTable(size_t slots)
    : slots_(new std::atomic<uint64_t>[slots_for(slots)]), mask_(slots_for(slots) - 1) {
  for (size_t i = 0; i <= mask_; ++i)
    slots_[i].store(0, std::memory_order_relaxed);
}

std::shared_ptr<CountTable> CountTable::named(const std::string& name, size_t slots) {
  return named_table<CountTable>(name, slots);
}

CountTable::Ticket CountTable::acquire(uint64_t key, uint64_t max) {
  const uint64_t tag = tag_of(key);
  const size_t at = static_cast<size_t>(key) & mask_;
  max = std::min(max, kMaxCount);
  for (int attempt = 0;; ++attempt) {
    // The key's own slot first: it may be anywhere among the probes; else the first free one.
    bool retry = false;
    for (int pass = 0; pass < 2 && !retry; ++pass) {
      for (size_t i = 0; i < kProbe && !retry; ++i) {
        auto& s = slots_[(at + i) & mask_];
        uint64_t w = s.load(std::memory_order_seq_cst);
        for (;;) {
          uint64_t count = w & kCountMask;
          bool mine = count > 0 && (w >> 24) == tag;
          if (pass == 0 && !mine)
            break; // looking for its own slot only
          if (pass == 1 && count > 0 && !mine)
            break; // another key's
          if (count >= max)
            return nullptr;
          uint64_t next = count == 0 ? (tag << 24) | 1 : w + 1;
          if (!s.compare_exchange_weak(w, next, std::memory_order_seq_cst))
            continue;
          // A new slot for the key while another worker holds or took one too: one slot per
          // key, so this one goes back and the count goes to the other (after a few tries,
          // two workers taking new slots at once keep theirs: a count split in two).
          if (count == 0 && attempt < 4 && other_slot(at, tag, &s)) {
            release(&s);
            retry = true;
            break;
          }
          return &s;
        }
      }
    }
    if (!retry)
      return nullptr;
  }
}

bool CountTable::other_slot(size_t at, uint64_t tag, const std::atomic<uint64_t>* mine) const {
  for (size_t i = 0; i < kProbe; ++i) {
    const auto& s = slots_[(at + i) & mask_];
    uint64_t w = s.load(std::memory_order_seq_cst);
    if (&s != mine && (w & kCountMask) > 0 && (w >> 24) == tag)
      return true;
  }
  return false;
}

void CountTable::release(Ticket t) {
  // The count is above 0 while a ticket is out, so the slot is still the key's.
  uint64_t w = t->load(std::memory_order_relaxed);
  uint64_t next;
  do
    next = (w & kCountMask) == 1 ? 0 : w - 1;
  while (!t->compare_exchange_weak(w, next, std::memory_order_acq_rel));
}

uint64_t CountTable::count(uint64_t key) const {
  const uint64_t tag = tag_of(key);
  const size_t at = static_cast<size_t>(key) & mask_;
  for (size_t i = 0; i < kProbe; ++i) {
    uint64_t w = slots_[(at + i) & mask_].load(std::memory_order_relaxed);
    if ((w & kCountMask) > 0 && (w >> 24) == tag)
      return w & kCountMask;
  }
  return 0;
}

} // namespace portico::limits
