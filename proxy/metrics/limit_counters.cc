#include "metrics/limit_counters.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace portico::metrics {

namespace {

template <typename T> struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<T>, std::less<>> named;

  T& get(std::string_view name) {
    std::lock_guard lock(mu);
    auto it = named.find(name);
    if (it == named.end())
      it = named.emplace(std::string(name), std::make_unique<T>()).first;
    return *it->second;
  }
  void each(const std::function<void(const std::string&, const T&)>& f) {
    std::lock_guard lock(mu);
    for (const auto& [name, c] : named)
      f(name, *c);
  }
};

Registry<LimitCounters>& limits() {
  static Registry<LimitCounters> r;
  return r;
}

Registry<AuthCounters>& auths() {
  static Registry<AuthCounters> r;
  return r;
}

Registry<StoreCounters>& stores() {
  static Registry<StoreCounters> r;
  return r;
}

} // namespace

LimitCounters& limit_counters(std::string_view name) {
  return limits().get(name);
}

void for_each_limit(const std::function<void(const std::string&, const LimitCounters&)>& f) {
  limits().each(f);
}

AuthCounters& auth_counters(std::string_view name) {
  return auths().get(name);
}

void for_each_auth(const std::function<void(const std::string&, const AuthCounters&)>& f) {
  auths().each(f);
}

void StoreCounters::observe(double seconds) {
  size_t i = 0;
  while (i < kStoreBucketCount && seconds > kStoreBuckets[i])
    ++i;
  buckets[i].fetch_add(1, std::memory_order_relaxed);
  sum_us.fetch_add(static_cast<uint64_t>(std::max(0.0, seconds) * 1e6), std::memory_order_relaxed);
}

StoreCounters& store_counters(std::string_view address) {
  return stores().get(address);
}

void for_each_store(const std::function<void(const std::string&, const StoreCounters&)>& f) {
  stores().each(f);
}

} // namespace portico::metrics
