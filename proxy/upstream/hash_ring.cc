#include "upstream/hash_ring.h"

#include <algorithm>
#include <xxhash.h>

namespace portico::upstream {

void HashRing::build(std::span<const HashMember> members) {
  points_.clear();
  uint64_t total = 0;
  for (const auto& m : members)
    total += static_cast<uint64_t>(std::max(m.weight, 0));
  if (total == 0)
    return;
  uint64_t per = std::max<uint64_t>(kPointsPerWeight, (kMinPoints + total - 1) / total);
  per = std::min<uint64_t>(per, std::max<uint64_t>(1, kMaxPoints / total));
  points_.reserve(total * per);
  for (size_t i = 0; i < members.size(); ++i) {
    uint64_t n = static_cast<uint64_t>(std::max(members[i].weight, 0)) * per;
    // Point k of a member is its id hashed with seed k: the same on every worker.
    for (uint64_t k = 0; k < n; ++k)
      points_.push_back(
          {XXH64(members[i].id.data(), members[i].id.size(), k), static_cast<uint32_t>(i)});
  }
  // Two members' points that collide are ordered by their ids, not by insertion order.
  std::sort(points_.begin(), points_.end(), [&](const Point& a, const Point& b) {
    return a.hash != b.hash ? a.hash < b.hash : members[a.member].id < members[b.member].id;
  });
}

size_t HashRing::lower_bound(uint64_t hash) const {
  auto it = std::lower_bound(points_.begin(), points_.end(), hash,
                             [](const Point& p, uint64_t h) { return p.hash < h; });
  return it == points_.end() ? 0 : static_cast<size_t>(it - points_.begin());
}

} // namespace portico::upstream
