#pragma once
// Header fields as views: the bytes live in the exchange's arena or in a static table.
#include <cstddef>
#include <string_view>

namespace portico::http {

struct Header {
  std::string_view name; // lower case on every path Portico builds
  std::string_view value;
};

inline char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? char(c + 32) : c;
}

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i]))
      return false;
  return true;
}

// True when the comma-separated list value contains token (case-insensitive), as in
// "Connection: keep-alive, Upgrade".
bool list_contains(std::string_view value, std::string_view token);

} // namespace portico::http
