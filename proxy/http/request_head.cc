#include "http/request_head.h"

namespace portico::http {

std::string_view query_param(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    auto eq = item.find('=');
    if (item.substr(0, eq) == key)
      return eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    if (amp == std::string_view::npos)
      break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

} // namespace portico::http
