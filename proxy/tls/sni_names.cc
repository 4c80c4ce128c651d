#include "tls/sni_names.h"

#include "http/header.h"

#include <algorithm>
#include <string>

namespace portico::tls {

void SniNames::add(std::string_view pattern, size_t entry) {
  bool wild = pattern.starts_with("*.");
  std::string key;
  http::assign_lower(key, wild ? pattern.substr(1) : pattern);
  (wild ? wildcard_ : exact_).emplace(std::move(key), entry);
}

size_t SniNames::find(std::string_view name) const {
  thread_local std::string key;
  http::assign_lower(key, name);
  size_t best = kNone;
  if (auto it = exact_.find(key); it != exact_.end())
    best = it->second;
  if (size_t dot = key.find('.'); dot != std::string::npos && dot > 0)
    if (auto it = wildcard_.find(std::string_view(key).substr(dot)); it != wildcard_.end())
      best = std::min(best, it->second);
  return best;
}

} // namespace portico::tls
