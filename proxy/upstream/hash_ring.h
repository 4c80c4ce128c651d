#pragma once
// A consistent-hash ring (Envoy's ring_hash, nginx's `hash ... consistent`): each member is a
// number of points on a 64-bit circle in proportion to its weight, and a key goes to the first
// point at or after its hash. A member that leaves takes only its own keys with it, which go
// to the members after its points; they come back when it does.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace portico::upstream {

struct HashMember {
  std::string_view id; // stable over workers and restarts: its address as configured
  int weight = 1;
};

class HashRing {
public:
  static constexpr size_t kNone = SIZE_MAX;
  // Points per unit of weight: nginx's 160, fewer for very large clusters so that the ring
  // stays within kMaxPoints, more for small ones so that it has at least kMinPoints.
  static constexpr size_t kPointsPerWeight = 160, kMinPoints = 1024, kMaxPoints = 1 << 20;

  void build(std::span<const HashMember> members);
  // The member for hash: the first point's at or after it (round the circle) whose member is
  // usable(index); kNone when none is.
  template <class Usable> size_t find(uint64_t hash, Usable usable) const {
    if (points_.empty())
      return kNone;
    size_t at = lower_bound(hash);
    for (size_t k = 0; k < points_.size(); ++k) {
      const Point& p = points_[(at + k) % points_.size()];
      if (usable(p.member))
        return p.member;
    }
    return kNone;
  }
  size_t points() const { return points_.size(); }

private:
  struct Point {
    uint64_t hash;
    uint32_t member;
  };
  size_t lower_bound(uint64_t hash) const;
  std::vector<Point> points_; // by hash
};

} // namespace portico::upstream
