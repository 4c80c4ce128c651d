#include "upstream/maglev_table.h"

#include <algorithm>

namespace portico::upstream {

void MaglevTable::build(std::span<const HashMember> members) {
  table_.clear();
  members_ = std::min(members.size(), kMaxMembers);
  struct Filler {
    uint64_t offset, skip, next = 0;
    int64_t credit = 0;
  };
  std::vector<Filler> fill(members_);
  int max_weight = 0;
  for (size_t i = 0; i < members_; ++i) {
    const auto& id = members[i].id;
    fill[i].offset = XXH64(id.data(), id.size(), 0) % kSize;
    fill[i].skip = XXH64(id.data(), id.size(), 1) % (kSize - 1) + 1;
    max_weight = std::max(max_weight, members[i].weight);
  }
  if (max_weight <= 0)
    return;
  constexpr uint16_t kEmpty = UINT16_MAX;
  table_.assign(kSize, kEmpty);
  // In turn, each member earns its weight in credit and takes a slot for every max_weight of
  // it: the heaviest take one each turn, the others in proportion.
  for (size_t filled = 0; filled < kSize;) {
    for (size_t i = 0; i < members_ && filled < kSize; ++i) {
      Filler& f = fill[i];
      f.credit += members[i].weight;
      if (f.credit < max_weight)
        continue;
      f.credit -= max_weight;
      uint64_t slot;
      do
        slot = (f.offset + f.skip * f.next++) % kSize;
      while (table_[slot] != kEmpty);
      table_[slot] = static_cast<uint16_t>(i);
      ++filled;
    }
  }
}

size_t MaglevTable::slots_of(size_t m) const {
  return static_cast<size_t>(std::count(table_.begin(), table_.end(), static_cast<uint16_t>(m)));
}

} // namespace portico::upstream
