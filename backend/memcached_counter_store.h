#pragma once
// Counters in memcached through libmemcached: "incr counter:K 1", and "add" at 1 when the key
// is absent. One client per worker process, made after fork.
#include "counter_store.h"

#include <libmemcached/memcached.h>

namespace portico::backend {

class MemcachedCounterStore final : public CounterStore {
public:
  // address: "HOST:PORT" (the part after memcached://).
  explicit MemcachedCounterStore(const std::string& address);
  ~MemcachedCounterStore() override;
  MemcachedCounterStore(const MemcachedCounterStore&) = delete;
  MemcachedCounterStore& operator=(const MemcachedCounterStore&) = delete;

  core::expected<uint64_t, std::string> increment(std::string_view key) override;

private:
  memcached_st* mc_ = nullptr;
};

} // namespace portico::backend
