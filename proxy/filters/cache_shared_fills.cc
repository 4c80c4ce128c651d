#include "filters/cache_shared_fills.h"

#include <algorithm>

namespace portico::filters {

bool SharedFills::claim(std::string_view key, Member* by) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    entries_.emplace(std::string(key), Entry{by, {}});
    return true;
  }
  if (it->second.owner == by)
    return false; // its own fetch: it waits on it locally
  auto& w = it->second.waiting;
  if (std::find(w.begin(), w.end(), by) == w.end())
    w.push_back(by);
  return false;
}

void SharedFills::release(std::string_view key, Member* by,
                          std::shared_ptr<cache::StoredResponse> r) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.owner != by)
    return;
  std::string k = it->first;
  std::vector<Member*> waiting = std::move(it->second.waiting);
  entries_.erase(it);
  // Under the lock: a member leaving waits for it, so none is told after it has gone.
  for (Member* m : waiting)
    m->fill_done(k, r);
}

void SharedFills::leave(Member* m) {
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto& e = it->second;
    std::erase(e.waiting, m);
    if (e.owner != m) {
      ++it;
      continue;
    }
    for (Member* w : e.waiting)
      w->fill_done(it->first, nullptr);
    it = entries_.erase(it);
  }
}

} // namespace portico::filters
