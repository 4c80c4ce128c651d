#include "metrics/cluster_policy_counters.h"

#include <map>
#include <mutex>

namespace portico::metrics {

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<OutlierCounters>, std::less<>> by_cluster;
};

Registry& registry() {
  static Registry r;
  return r;
}

struct Breakers {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<BreakerCounters>, std::less<>> by_cluster;
};

Breakers& breakers() {
  static Breakers b;
  return b;
}

} // namespace

std::shared_ptr<OutlierCounters> outlier_counters(const std::string& cluster,
                                                  const std::vector<std::string>& endpoints) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto& entry = r.by_cluster[cluster];
  auto c = entry.lock();
  if (!c || c->endpoints != endpoints) {
    c = std::make_shared<OutlierCounters>(cluster, endpoints);
    entry = c;
  }
  return c;
}

std::shared_ptr<const OutlierCounters> find_outlier_counters(std::string_view cluster) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.by_cluster.find(cluster);
  return it == r.by_cluster.end() ? nullptr : it->second.lock();
}

void for_each_outlier(const std::function<void(const OutlierCounters&)>& f) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  for (auto& [name, weak] : r.by_cluster)
    if (auto c = weak.lock())
      f(*c);
}

BreakerCounters& breaker_counters(std::string_view cluster) {
  auto& b = breakers();
  std::lock_guard lock(b.mu);
  auto it = b.by_cluster.find(cluster);
  if (it == b.by_cluster.end())
    it = b.by_cluster.emplace(std::string(cluster), std::make_unique<BreakerCounters>()).first;
  return *it->second;
}

void for_each_breaker(const std::function<void(const std::string&, const BreakerCounters&)>& f) {
  auto& b = breakers();
  std::lock_guard lock(b.mu);
  for (const auto& [name, c] : b.by_cluster)
    f(name, *c);
}

} // namespace portico::metrics
