#include "shm_counter_table.h"

#include <cstring>
#include <sys/mman.h>

namespace portico::backend {

namespace {
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
} // namespace

ShmCounterTable::ShmCounterTable(size_t slots) : count_(slots) {
  void* p = ::mmap(nullptr, sizeof(Slot) * slots, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED)
    slots_ = static_cast<Slot*>(p); // zero-filled: every slot free
}

ShmCounterTable::~ShmCounterTable() {
  if (slots_)
    ::munmap(slots_, sizeof(Slot) * count_);
}

ShmCounterTable::Slot* ShmCounterTable::find(std::string_view key, bool create) const {
  size_t i = fnv1a(key) % count_;
  for (size_t probes = 0; probes < count_; ++probes, i = (i + 1) % count_) {
    Slot& s = slots_[i];
    uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == 0) {
      if (!create)
        return nullptr;
      uint32_t expected = 0;
      if (s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        std::memcpy(s.key, key.data(), key.size());
        s.key_len = static_cast<uint32_t>(key.size());
        s.state.store(2, std::memory_order_release);
        return &s;
      }
      st = expected;
    }
    while (st == 1) // another worker is writing this slot's key: a few instructions away
      st = s.state.load(std::memory_order_acquire);
    if (s.key_len == key.size() && std::memcmp(s.key, key.data(), key.size()) == 0)
      return &s;
  }
  return nullptr;
}

core::expected<uint64_t, std::string> ShmCounterTable::increment(std::string_view key) {
  if (key.size() > kMaxKey) {
    return core::unexpected("counter key too long");
  }
  Slot* s = find(key, true);
  if (!s) {
    return core::unexpected("counter table full");
  }
  return s->value.fetch_add(1, std::memory_order_relaxed) + 1;
}

uint64_t ShmCounterTable::get(std::string_view key) const {
  Slot* s = key.size() <= kMaxKey ? find(key, false) : nullptr;
  return s ? s->value.load(std::memory_order_relaxed) : 0;
}

} // namespace portico::backend
