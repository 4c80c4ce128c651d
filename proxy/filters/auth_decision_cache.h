#pragma once
// A forward auth's allowances remembered for `cache` seconds (filters/forward_auth.cc): one per
// worker and route, used on its loop only. The key is everything the auth service was shown
// (method, URI, host, the fields sent along), so a remembered answer is the one it gave to
// that same question; only 2xx answers are kept, with the fields they had copied onto the
// request. At most `size` entries: when full, the oldest goes first.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace portico::filters {

class AuthDecisionCache {
public:
  using Fields = std::vector<std::pair<std::string, std::string>>;
  AuthDecisionCache(double ttl_s, size_t size)
      : ttl_ns_(static_cast<int64_t>(ttl_s * 1e9)), size_(size) {}

  // key's fields when an allowance of it is remembered and fresh at now_ns.
  const Fields* find(std::string_view key, int64_t now_ns) const;
  void remember(std::string_view key, Fields fields, int64_t now_ns);
  size_t size() const { return entries_.size(); }

private:
  struct Entry {
    int64_t expires_ns;
    Fields fields;
  };
  int64_t ttl_ns_;
  size_t size_;
  std::unordered_map<std::string, Entry> entries_;
  std::deque<std::pair<std::string, int64_t>> order_; // key, its expiry: oldest first
};

} // namespace portico::filters
