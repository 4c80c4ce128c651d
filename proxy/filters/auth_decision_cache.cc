#include "filters/auth_decision_cache.h"

namespace portico::filters {

const AuthDecisionCache::Fields* AuthDecisionCache::find(std::string_view key,
                                                         int64_t now_ns) const {
  thread_local std::string k;
  k.assign(key);
  auto it = entries_.find(k);
  if (it == entries_.end() || it->second.expires_ns <= now_ns)
    return nullptr;
  return &it->second.fields;
}

void AuthDecisionCache::remember(std::string_view key, Fields fields, int64_t now_ns) {
  int64_t expires = now_ns + ttl_ns_;
  // The oldest first: those expired, then as many as it takes to stay within size.
  while (!order_.empty() && (order_.front().second <= now_ns || entries_.size() >= size_)) {
    auto it = entries_.find(order_.front().first);
    if (it != entries_.end() && it->second.expires_ns == order_.front().second)
      entries_.erase(it); // not one remembered again since
    order_.pop_front();
  }
  auto& e = entries_[std::string(key)];
  e.expires_ns = expires;
  e.fields = std::move(fields);
  order_.emplace_back(std::string(key), expires);
}

} // namespace portico::filters
