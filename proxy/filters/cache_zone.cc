#include "filters/cache_zone.h"

#include "cache/policy.h"

namespace portico::filters {

CacheZone::~CacheZone() {
  settings.fills->leave(this); // no fill_done after this
  if (loop_)
    ev_async_stop(loop_, &mailbox_ready_);
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
  if (disk) // what any worker stored is there: counted once, by the worker that erases it
    n = r.prefix ? disk->erase_prefix(key) : disk->erase(key) + disk->erase_prefix(key + "\n");
  stored();
  return n;
}

cache::Variants* CacheZone::find(std::string_view key) {
  cache::Variants* v = store.find(key);
  if (v || !disk)
    return v;
  auto list = disk->load(key);
  if (list.empty())
    return nullptr;
  // Stored under set_cookie = "store" (or by a version that stored them all), a response
  // that sets a cookie must not answer once the route passes them: the key is fetched anew.
  if (settings.set_cookie == CacheSettings::SetCookie::PASS)
    for (const auto& r : list)
      if (cache::sets_cookie(r->fields)) {
        disk->erase(key);
        return nullptr;
      }
  for (auto it = list.rbegin(); it != list.rend(); ++it) // put() puts each first
    store.put(key, std::move(*it));
  stored();
  return store.find(key);
}

void CacheZone::put(std::string_view key, std::shared_ptr<cache::StoredResponse> r) {
  if (disk)
    disk->save(key, *r);
  store.put(key, std::move(r));
  stored();
}

void CacheZone::erase(std::string_view key) {
  store.erase(key);
  if (disk)
    disk->erase(key);
  stored();
}

CacheFill* CacheZone::fill_for(std::string_view key) {
  auto it = fills_.find(key);
  return it == fills_.end() ? nullptr : it->second.get();
}

bool CacheZone::start_revalidation(const std::string& key, time_t now) {
  auto [it, fresh] = revalidating_.try_emplace(key, now);
  if (!fresh && now - it->second < 60)
    return false;
  it->second = now;
  return true;
}

void CacheZone::attach(struct ev_loop* loop) {
  if (loop_)
    return;
  loop_ = loop;
  if (!settings.disk.empty()) {
    disk = cache::DiskStore::open(settings.disk, settings.disk_size, settings.max_variants);
  }
  ev_async_init(&mailbox_ready_, &CacheZone::mailbox_cb);
  mailbox_ready_.data = this;
  ev_async_start(loop_, &mailbox_ready_);
}

CacheFill* CacheZone::start_fill(std::string_view key) {
  if (fill_for(key))
    return nullptr;
  auto fill = std::make_unique<CacheFill>();
  CacheFill* f = fill.get();
  f->key_ = key;
  if (loop_) {
    f->wanted_ = settings.fills->claim(key, this);
    f->claimed_ = f->wanted_ != nullptr;
    f->remote_ = !f->claimed_;
  }
  fills_.emplace(std::string(key), std::move(fill));
  return f;
}

void CacheZone::share_fill(CacheFill* fill, std::shared_ptr<cache::StoredResponse> r) {
  if (fill->claimed_)
    settings.fills->share(fill->key_, this, *r);
  fill->response_ = std::move(r);
  auto waiters = std::move(fill->waiters_);
  fill->waiters_.clear();
  for (auto* w : waiters)
    w->fill_ready(*fill);
}

void CacheZone::end_fill(CacheFill* fill, time_t pass_until,
                         std::shared_ptr<cache::StoredResponse> done) {
  auto it = fills_.find(fill->key_);
  if (it == fills_.end() || it->second.get() != fill)
    return;
  if (fill->claimed_)
    settings.fills->release(fill->key_, this, std::move(done));
  if (pass_until) {
    store.pass(it->first, pass_until);
    stored();
  }
  std::unique_ptr<CacheFill> gone = std::move(it->second);
  fills_.erase(it);
  for (auto* w : gone->waiters_)
    w->fill_gone();
}

void CacheZone::post(Letter l) {
  {
    std::lock_guard lock(mailbox_mu_);
    mailbox_.push_back(std::move(l));
  }
  ev_async_send(loop_, &mailbox_ready_);
}

void CacheZone::fill_done(const std::string& key, std::shared_ptr<cache::StoredResponse> r) {
  post({Letter::DONE, key, std::move(r), {}});
}

void CacheZone::fill_head(const std::string& key, const cache::StoredResponse& head) {
  post({Letter::HEAD, key, cache::copy_head(head), {}});
}

void CacheZone::fill_data(const std::string& key, std::string_view data) {
  post({Letter::DATA, key, nullptr, std::string(data)});
}

void CacheZone::fill_wanted(const std::string& key) {
  post({Letter::WANTED, key, nullptr, {}});
}

void CacheZone::mailbox_cb(struct ev_loop*, ev_async* w, int) {
  static_cast<CacheZone*>(w->data)->take_mailbox();
}

void CacheZone::take_mailbox() {
  decltype(mailbox_) letters;
  {
    std::lock_guard lock(mailbox_mu_);
    letters.swap(mailbox_);
  }
  for (auto& l : letters) {
    CacheFill* fill = fill_for(l.key);
    if (fill && l.kind == Letter::WANTED) {
      if (fill->claimed_ && fill->response_)
        settings.fills->grow(l.key, this, *fill->response_, {});
      continue;
    }
    if (!fill || !fill->remote_)
      continue;
    if (l.kind != Letter::DONE || fill->response_) {
      streamed(l, fill);
      continue;
    }
    if (l.response) { // complete and immutable: this worker keeps it too, and its waiters get it
      store.put(l.key, l.response);
      stored();
      share_fill(fill, l.response);
    }
    end_fill(fill, 0); // waiters it did not suit go upstream
  }
}

// A letter of a fetch this worker streams: its waiters read the copy as it grows here.
void CacheZone::streamed(Letter& l, CacheFill* fill) {
  switch (l.kind) {
  case Letter::HEAD:
    if (!fill->response_)
      share_fill(fill, std::move(l.response));
    return;
  case Letter::DATA:
    if (fill->response_)
      fill->response_->body->append(l.data);
    return;
  case Letter::WANTED: return;
  case Letter::DONE: {
    auto mine = fill->response_;
    if (l.response) {
      mine->length = static_cast<int64_t>(mine->body->bytes.size());
      mine->body->bytes.shrink_to_fit();
      mine->body->finish(true);
      store.put(l.key, mine);
      stored();
    } else {
      mine->body->finish(false); // its readers stop where they are
    }
    end_fill(fill, 0);
    return;
  }
  }
}

} // namespace portico::filters
