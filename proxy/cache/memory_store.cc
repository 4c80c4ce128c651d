#include "cache/memory_store.h"

#include <algorithm>

namespace portico::cache {

MemoryStore::MemoryStore(size_t capacity_bytes, size_t max_variants)
    : fifo_(capacity_bytes,
            [this](const std::string&, Variants& v) {
              ++counts_.evictions;
              objects_ -= v.list.size();
            }),
      max_variants_(std::max<size_t>(1, max_variants)) {}

size_t MemoryStore::entry_cost(std::string_view key, const Variants& v) {
  size_t n = 96 + 2 * key.size() + sizeof(Variants) +
             v.list.capacity() * sizeof(std::shared_ptr<StoredResponse>);
  for (const auto& r : v.list)
    n += r->cost();
  return n;
}

Variants MemoryStore::take(const std::string& key) {
  Variants out;
  if (Variants* v = fifo_.peek(key)) {
    out = std::move(*v);
    objects_ -= out.list.size();
    fifo_.erase(key);
  }
  return out;
}

bool MemoryStore::put(std::string_view key, std::shared_ptr<StoredResponse> r) {
  std::string k(key);
  Variants next = take(k);
  next.pass_until = 0;
  std::erase_if(next.list, [&](const auto& old) { return old->vary_key == r->vary_key; });
  next.list.insert(next.list.begin(), std::move(r));
  if (next.list.size() > max_variants_)
    next.list.resize(max_variants_);
  size_t count = next.list.size();
  size_t cost = entry_cost(k, next);
  if (!fifo_.insert(k, std::move(next), cost))
    return false;
  objects_ += count;
  return true;
}

void MemoryStore::pass(std::string_view key, time_t until) {
  std::string k(key);
  Variants next = take(k);
  next.pass_until = until;
  size_t cost = entry_cost(k, next);
  fifo_.insert(k, std::move(next), cost);
}

bool MemoryStore::erase(std::string_view key) {
  Variants* v = fifo_.peek(key);
  if (!v)
    return false;
  objects_ -= v->list.size();
  return fifo_.erase(std::string(key));
}

size_t MemoryStore::erase_prefix(std::string_view prefix) {
  std::vector<std::string> keys;
  fifo_.for_each_key([&](const std::string& k) {
    if (k.starts_with(prefix))
      keys.push_back(k);
  });
  for (const auto& k : keys) {
    if (Variants* v = fifo_.peek(k))
      objects_ -= v->list.size();
    fifo_.erase(k);
  }
  return keys.size();
}

} // namespace portico::cache
