#include "filters/cache_zone.h"

namespace portico::filters {

CacheZone::~CacheZone() {
  // A reload's new router has its own zones: what this one held leaves the gauges.
  metrics.stored_bytes.add(-reported_bytes_);
  metrics.stored_objects.add(-reported_objects_);
}

void CacheZone::stored() {
  auto bytes = static_cast<int64_t>(store.used_bytes());
  auto objects = static_cast<int64_t>(store.objects());
  metrics.stored_bytes.add(bytes - reported_bytes_);
  metrics.stored_objects.add(objects - reported_objects_);
  metrics.evictions.inc(store.counts().evictions - reported_evictions_);
  reported_bytes_ = bytes;
  reported_objects_ = objects;
  reported_evictions_ = store.counts().evictions;
}

size_t CacheZone::purge(const routing::PurgeRequest& r) {
  std::string key;
  cache::KeyParts parts = settings.key;
  parts.fields.clear(); // the URL's responses whatever their key fields, which follow a newline
  cache::build_key(parts, r.scheme, r.authority, r.target, {}, key);
  size_t n = r.prefix ? store.erase_prefix(key) : store.erase(key) + store.erase_prefix(key + "\n");
  stored();
  return n;
}

CacheFill* CacheZone::fill_for(std::string_view key) {
  auto it = fills_.find(key);
  return it == fills_.end() ? nullptr : it->second.get();
}

CacheFill* CacheZone::start_fill(std::string_view key) {
  if (fill_for(key))
    return nullptr;
  auto fill = std::make_unique<CacheFill>();
  CacheFill* f = fill.get();
  f->key_ = key;
  fills_.emplace(std::string(key), std::move(fill));
  return f;
}

void CacheZone::share_fill(CacheFill* fill, std::shared_ptr<cache::StoredResponse> r) {
  fill->response_ = std::move(r);
  auto waiters = std::move(fill->waiters_);
  fill->waiters_.clear();
  for (auto* w : waiters)
    w->fill_ready(*fill);
}

void CacheZone::end_fill(CacheFill* fill, time_t pass_until) {
  auto it = fills_.find(fill->key_);
  if (it == fills_.end() || it->second.get() != fill)
    return;
  if (pass_until) {
    store.pass(it->first, pass_until);
    stored();
  }
  std::unique_ptr<CacheFill> gone = std::move(it->second);
  fills_.erase(it);
  for (auto* w : gone->waiters_)
    w->fill_gone();
}

} // namespace portico::filters
