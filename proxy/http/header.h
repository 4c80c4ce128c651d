#pragma once
// Header fields as views: the bytes live in the exchange's arena or in a static table.
#include <cstddef>
#include <string>
#include <string_view>

namespace portico::http {

struct Header {
  std::string_view name; // lower case on every path Portico builds
  std::string_view value;
};

inline char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? char(c + 32) : c;
}

// s in ASCII lower case, into out (reused: no allocation once it is large enough).
inline void assign_lower(std::string& out, std::string_view s) {
  out.resize(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    out[i] = ascii_lower(s[i]);
}

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i]))
      return false;
  return true;
}

// s without the optional whitespace (spaces and tabs, RFC 9110 5.6.3) before it, after it, or
// around it.
inline std::string_view trim_ows_front(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  return s;
}
inline std::string_view trim_ows_back(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}
inline std::string_view trim_ows(std::string_view s) {
  return trim_ows_back(trim_ows_front(s));
}

// RFC 9110 5.6.2: a token is one or more tchar (letters, digits and !#$%&'*+-.^_`|~), as field
// names, methods, cookie names and Cache-Control directives are.
bool is_tchar(char c);
bool is_token(std::string_view s);

// True when the comma-separated list value contains token (case-insensitive), as in
// "Connection: keep-alive, Upgrade".
bool list_contains(std::string_view value, std::string_view token);

} // namespace portico::http
