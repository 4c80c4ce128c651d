#include "http/header.h"

namespace portico::http {

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
    return true;
  switch (c) {
  case '!':
  case '#':
  case '$':
  case '%':
  case '&':
  case '\'':
  case '*':
  case '+':
  case '-':
  case '.':
  case '^':
  case '_':
  case '`':
  case '|':
  case '~': return true;
  default: return false;
  }
}

bool is_token(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!is_tchar(c))
      return false;
  return true;
}

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
