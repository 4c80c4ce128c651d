#include "filters/cache_shared_fills.h"

#include <algorithm>

namespace portico::filters {

SharedFills::Wanted SharedFills::claim(std::string_view key, Member* by) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    auto wanted = std::make_shared<std::atomic<bool>>(false);
    entries_.emplace(std::string(key), Entry{by, wanted});
    return wanted;
  }
  auto& e = it->second;
  if (e.owner == by)
    return nullptr; // its own fetch: it waits on it locally
  if (std::find(e.waiting.begin(), e.waiting.end(), by) == e.waiting.end() &&
      std::find(e.streaming.begin(), e.streaming.end(), by) == e.streaming.end())
    e.waiting.push_back(by);
  e.wanted->store(true, std::memory_order_relaxed);
  if (e.shared) // the fetching member sends it what it has, without waiting for more
    e.owner->fill_wanted(it->first);
  return nullptr;
}

void SharedFills::share(std::string_view key, Member* by, const cache::StoredResponse& head) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.owner != by)
    return;
  auto& e = it->second;
  e.shared = true;
  for (Member* m : e.waiting)
    m->fill_head(it->first, head);
  e.streaming.insert(e.streaming.end(), e.waiting.begin(), e.waiting.end());
  e.waiting.clear();
}

void SharedFills::grow(std::string_view key, Member* by, const cache::StoredResponse& r,
                       std::string_view data) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.owner != by)
    return;
  auto& e = it->second;
  if (!data.empty())
    for (Member* m : e.streaming)
      m->fill_data(it->first, data);
  if (!e.shared || e.waiting.empty())
    return;
  for (Member* m : e.waiting) { // came in the middle: what arrived so far, this piece with it
    m->fill_head(it->first, r);
    m->fill_data(it->first, r.body->data());
  }
  e.streaming.insert(e.streaming.end(), e.waiting.begin(), e.waiting.end());
  e.waiting.clear();
}

void SharedFills::release(std::string_view key, Member* by,
                          std::shared_ptr<cache::StoredResponse> r) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.owner != by)
    return;
  std::string k = it->first;
  std::vector<Member*> waiting = std::move(it->second.waiting);
  waiting.insert(waiting.end(), it->second.streaming.begin(), it->second.streaming.end());
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
    std::erase(e.streaming, m);
    if (e.owner != m) {
      ++it;
      continue;
    }
    for (Member* w : e.waiting)
      w->fill_done(it->first, nullptr);
    for (Member* w : e.streaming)
      w->fill_done(it->first, nullptr);
    it = entries_.erase(it);
  }
}

} // namespace portico::filters
