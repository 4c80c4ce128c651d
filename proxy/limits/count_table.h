#pragma once
// Counts of things in progress per key (requests in flight, open connections), for many keys,
// shared by the workers without a lock: nginx's limit_conn. Each slot is one 64-bit word, a
// tag of the key's hash and its count, changed by compare-and-swap, so taking a slot for a key
// and counting in it are one step and a slot is never shared by two keys' counts. A slot
// whose count is 0 is free; a key that finds none free among the kProbe it may use is refused
// (nginx answers the same when its zone is full): the table is exact, and holds as many keys
// busy at once as it has slots. Two tags of 40 bits that meet in a probe window share a count.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace portico::limits {

class CountTable {
public:
  static constexpr size_t kProbe = 8;
  static constexpr uint64_t kMaxCount = (uint64_t{1} << 24) - 1;

  explicit CountTable(size_t slots);
  // The table of the limit called name (as GcraTable::named).
  static std::shared_ptr<CountTable> named(const std::string& name, size_t slots);

  using Ticket = std::atomic<uint64_t>*;
  // One more for key when it has fewer than max: the ticket to give back; null when it has
  // max already, or no slot is free for it.
  Ticket acquire(uint64_t key, uint64_t max);
  void release(Ticket t);
  // key's count now (for tests and the dashboard).
  uint64_t count(uint64_t key) const;

  size_t slots() const { return mask_ + 1; }
  // The slots a table asked for slots has: a power of two, at least kProbe.
  static size_t slots_for(size_t slots) { return std::bit_ceil(std::max(slots, kProbe)); }

private:
  // Another slot among key's probes counts for tag.
  bool other_slot(size_t at, uint64_t tag, const std::atomic<uint64_t>* mine) const;
  static uint64_t tag_of(uint64_t key) { return (key >> 24) | 1; } // never 0: a free slot's
  std::unique_ptr<std::atomic<uint64_t>[]> slots_;
  size_t mask_;
};

} // namespace portico::limits
