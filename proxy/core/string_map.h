#pragma once
// A hash map keyed by std::string that a std::string_view finds without a copy: for lookups on
// the request path (route hosts and paths, SNI names) where the key is a view into the input.
#include <string>
#include <string_view>
#include <unordered_map>

namespace portico::core {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

} // namespace portico::core
