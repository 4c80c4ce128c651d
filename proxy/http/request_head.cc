#include "http/request_head.h"

namespace portico::http {

std::string_view host_of(std::string_view a) {
  if (!a.empty() && a.front() == '[') {
    auto close = a.find(']');
    return close == std::string_view::npos ? a : a.substr(0, close + 1);
  }
  return a.substr(0, a.find(':'));
}

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

bool RequestHead::is_websocket_upgrade() const {
  if (framed())
    return method == "CONNECT" && iequals(protocol, "websocket");
  if (version != Version::HTTP_1_1 || method != "GET")
    return false;
  const Header* upgrade = find("upgrade");
  const Header* connection = find("connection");
  return upgrade && connection && list_contains(upgrade->value, "websocket") &&
         list_contains(connection->value, "upgrade");
}

} // namespace portico::http
