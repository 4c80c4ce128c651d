#include "http/header.h"

namespace portico::http {

bool list_contains(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    auto comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
      item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t'))
      item.remove_suffix(1);
    if (iequals(item, token))
      return true;
    if (comma == std::string_view::npos)
      break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

} // namespace portico::http
