#include "memcached_counter_store.h"

#include <cstdlib>

namespace portico::backend {

MemcachedCounterStore::MemcachedCounterStore(const std::string& address) {
  mc_ = memcached_create(nullptr);
  std::string host = address;
  in_port_t port = 11211;
  if (auto colon = address.rfind(':'); colon != std::string::npos) {
    host = address.substr(0, colon);
    port = static_cast<in_port_t>(std::atoi(address.c_str() + colon + 1));
  }
  memcached_server_add(mc_, host.c_str(), port);
  memcached_behavior_set(mc_, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
  memcached_behavior_set(mc_, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, 1000);
  memcached_behavior_set(mc_, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, 1000);
  // A dead memcached must not stall every request for long: retry the server after 1 s.
  memcached_behavior_set(mc_, MEMCACHED_BEHAVIOR_RETRY_TIMEOUT, 1);
}

MemcachedCounterStore::~MemcachedCounterStore() {
  memcached_free(mc_);
}

core::expected<uint64_t, std::string> MemcachedCounterStore::increment(std::string_view key) {
  std::string k = "counter:";
  k.append(key);
  // Two rounds: a concurrent "add" from another worker makes ours fail, then incr succeeds.
  for (int round = 0; round < 2; ++round) {
    uint64_t value = 0;
    memcached_return_t rc = memcached_increment(mc_, k.data(), k.size(), 1, &value);
    if (rc == MEMCACHED_SUCCESS)
      return value;
    if (rc != MEMCACHED_NOTFOUND) {
      return core::unexpected(memcached_strerror(mc_, rc));
    }
    rc = memcached_add(mc_, k.data(), k.size(), "1", 1, 0, 0);
    if (rc == MEMCACHED_SUCCESS)
      return 1;
    if (rc != MEMCACHED_NOTSTORED && rc != MEMCACHED_DATA_EXISTS) {
      return core::unexpected(memcached_strerror(mc_, rc));
    }
  }
  return core::unexpected("counter contended");
}

} // namespace portico::backend
