#pragma once
// Maglev hashing (Google's, as Envoy's `maglev` load balancer has it): a lookup table of a
// prime size, filled by the members in turn, each along its own permutation of the slots and as
// often as its weight says, so that each member has a share of the slots in proportion to its
// weight and a change of members moves few keys. A key's slot is its hash modulo the size. A
// member that is not usable (down, ejected) is skipped by hashing the key again: the other
// members' keys stay where they were.
#include "upstream/hash_ring.h"

#include <xxhash.h>

namespace portico::upstream {

class MaglevTable {
public:
  static constexpr size_t kNone = SIZE_MAX;
  static constexpr uint32_t kSize = 65537; // Envoy's default: a prime
  static constexpr size_t kMaxMembers = 65535;

  // At most kMaxMembers members; those past it get no slot.
  void build(std::span<const HashMember> members);
  template <class Usable> size_t find(uint64_t hash, Usable usable) const {
    if (table_.empty())
      return kNone;
    // A try per member and some: the chance of missing a usable member is then negligible.
    for (size_t attempt = 0; attempt < 2 * members_ + 8; ++attempt) {
      uint16_t m = table_[hash % kSize];
      if (usable(m))
        return m;
      hash = XXH64(&hash, sizeof hash, attempt + 1);
    }
    return kNone;
  }
  // Slots member m holds, for tests.
  size_t slots_of(size_t m) const;

private:
  std::vector<uint16_t> table_; // slot -> member
  size_t members_ = 0;
};

} // namespace portico::upstream
