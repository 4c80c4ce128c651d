#include "metrics/limit_counters.h"

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

} // namespace portico::metrics
