#include "http/request_key.h"

namespace portico::http {

namespace {

bool token(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      return false;
  return true;
}

} // namespace

std::optional<KeyPart> parse_key_part(std::string_view text) {
  if (text == "client")
    return KeyPart{KeyPart::CLIENT, {}};
  if (text == "route")
    return KeyPart{KeyPart::ROUTE, {}};
  if (text == "path")
    return KeyPart{KeyPart::PATH, {}};
  for (auto [prefix, kind] : {std::pair{std::string_view("header:"), KeyPart::HEADER},
                              std::pair{std::string_view("cookie:"), KeyPart::COOKIE},
                              std::pair{std::string_view("query:"), KeyPart::QUERY}}) {
    if (!text.starts_with(prefix) || !token(text.substr(prefix.size())))
      continue;
    std::string name(text.substr(prefix.size()));
    if (kind == KeyPart::HEADER)
      for (auto& c : name)
        c = ascii_lower(c);
    return KeyPart{kind, std::move(name)};
  }
  return std::nullopt;
}

std::string to_string(const KeyPart& part) {
  switch (part.kind) {
  case KeyPart::CLIENT: return "client";
  case KeyPart::ROUTE: return "route";
  case KeyPart::PATH: return "path";
  case KeyPart::HEADER: return "header:" + part.name;
  case KeyPart::COOKIE: return "cookie:" + part.name;
  case KeyPart::QUERY: return "query:" + part.name;
  }
  return "";
}

std::string_view cookie_value(const RequestHead& req, std::string_view name) {
  for (const auto& h : req.headers) {
    if (h.name != "cookie")
      continue;
    std::string_view rest = h.value;
    while (!rest.empty()) {
      size_t semi = rest.find(';');
      std::string_view pair = trim_ows(rest.substr(0, semi));
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      size_t eq = pair.find('=');
      if (eq != std::string_view::npos && pair.substr(0, eq) == name)
        return pair.substr(eq + 1);
    }
  }
  return {};
}

bool build_key(std::span<const KeyPart> parts, const RequestHead& req, std::string_view client,
               std::string_view route, std::string& out) {
  out.clear();
  for (const auto& p : parts) {
    std::string_view v;
    switch (p.kind) {
    case KeyPart::CLIENT: v = client; break;
    case KeyPart::ROUTE: v = route; break;
    case KeyPart::COOKIE: v = cookie_value(req, p.name); break;
    case KeyPart::PATH: v = req.path(); break;
    case KeyPart::QUERY: v = query_param(req.query(), p.name); break;
    case KeyPart::HEADER:
      if (const auto* h = req.find(p.name))
        v = h->value;
      break;
    }
    if (v.empty())
      return false;
    out.append(v);
    out.push_back('\0');
  }
  return true;
}

} // namespace portico::http
