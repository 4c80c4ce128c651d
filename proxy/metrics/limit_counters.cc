#include "metrics/limit_counters.h"

#include <map>
#include <memory>
#include <mutex>

namespace portico::metrics {

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<LimitCounters>, std::less<>> limits;
};

Registry& registry() {
  static Registry r;
  return r;
}

} // namespace

LimitCounters& limit_counters(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.limits.find(name);
  if (it == r.limits.end())
    it = r.limits.emplace(std::string(name), std::make_unique<LimitCounters>()).first;
  return *it->second;
}

void for_each_limit(const std::function<void(const std::string&, const LimitCounters&)>& f) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& [name, c] : r.limits)
    f(name, *c);
}

} // namespace portico::metrics
