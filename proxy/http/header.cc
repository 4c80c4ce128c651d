#include "http/header.h"

namespace portico::http {

bool list_contains(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    auto comma = value.find(',');
    if (iequals(trim_ows(value.substr(0, comma)), token))
      return true;
    if (comma == std::string_view::npos)
      break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

} // namespace portico::http
