#include "convert/nginx_values.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace portico::convert {

namespace {

std::optional<int64_t> digits(std::string_view s) {
  int64_t v = 0;
  if (s.empty() || s.size() > 15)
    return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    return std::nullopt;
  return v;
}

bool all_digits(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

std::optional<int> port_of(std::string_view s) {
  std::optional<int64_t> p = all_digits(s) ? digits(s) : std::nullopt;
  if (!p || *p < 1 || *p > 65535)
    return std::nullopt;
  return static_cast<int>(*p);
}

} // namespace

std::optional<int64_t> nginx_size(std::string_view s) {
  if (s.empty())
    return std::nullopt;
  int64_t unit = 1;
  switch (std::tolower(static_cast<unsigned char>(s.back()))) {
  case 'k': unit = 1024; break;
  case 'm': unit = 1024 * 1024; break;
  case 'g': unit = 1024LL * 1024 * 1024; break;
  default: break;
  }
  if (unit != 1)
    s.remove_suffix(1);
  std::optional<int64_t> v = digits(s);
  if (!v || *v > (INT64_MAX / unit))
    return std::nullopt;
  return *v * unit;
}

std::optional<int64_t> nginx_count(std::string_view s) {
  return all_digits(s) ? digits(s) : std::nullopt;
}

std::optional<double> nginx_seconds(std::string_view s) {
  if (s.empty())
    return std::nullopt;
  double total = 0;
  while (!s.empty()) {
    size_t n = 0;
    while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n])))
      ++n;
    std::optional<int64_t> v = digits(s.substr(0, n));
    if (!v)
      return std::nullopt;
    s.remove_prefix(n);
    double unit = 1;
    if (s.starts_with("ms")) {
      unit = 0.001;
      s.remove_prefix(2);
    } else if (!s.empty() && !std::isdigit(static_cast<unsigned char>(s[0]))) {
      switch (s[0]) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      case 'd': unit = 86400; break;
      case 'w': unit = 7 * 86400; break;
      case 'M': unit = 30 * 86400; break;
      case 'y': unit = 365 * 86400; break;
      default: return std::nullopt;
      }
      s.remove_prefix(1);
    } else if (!s.empty()) {
      return std::nullopt;
    }
    total += static_cast<double>(*v) * unit;
  }
  return total;
}

std::optional<std::string> nginx_endpoint(std::string_view s, int default_port) {
  if (s.starts_with("unix:"))
    return s.size() > 5 && s[5] == '/' ? std::optional<std::string>(std::string(s)) : std::nullopt;
  if (s.empty() || has_variable(s))
    return std::nullopt;
  std::string host;
  int port = default_port;
  if (s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string_view::npos)
      return std::nullopt;
    host = std::string(s.substr(0, close + 1));
    std::string_view rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':')
        return std::nullopt;
      std::optional<int> p = port_of(rest.substr(1));
      if (!p)
        return std::nullopt;
      port = *p;
    }
  } else {
    size_t colon = s.rfind(':');
    host = std::string(s.substr(0, colon));
    if (colon != std::string_view::npos) {
      std::optional<int> p = port_of(s.substr(colon + 1));
      if (!p)
        return std::nullopt;
      port = *p;
    }
    for (char c : host)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_')
        return std::nullopt;
    if (host == "*" || host.empty())
      host = "0.0.0.0";
    if (host == "localhost")
      host = "127.0.0.1";
  }
  return host + ":" + std::to_string(port);
}

std::optional<Listen> nginx_listen(const std::vector<std::string>& args, std::string* why) {
  if (args.empty()) {
    *why = "listen without an address";
    return std::nullopt;
  }
  Listen l;
  const std::string& a = args[0];
  if (a.starts_with("unix:")) {
    l.address = a;
  } else if (port_of(a)) {
    l.address = "0.0.0.0:" + a;
  } else {
    std::optional<std::string> e = nginx_endpoint(a, 80);
    if (!e) {
      *why = "listen address '" + a + "' is not one Portico can take";
      return std::nullopt;
    }
    l.address = *e;
  }
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& p = args[i];
    if (p == "ssl")
      l.ssl = true;
    else if (p == "default_server" || p == "default")
      l.default_server = true;
    else if (p == "proxy_protocol")
      l.proxy_protocol = true;
    else if (p == "http2" || p == "reuseport") // h2 and SO_REUSEPORT: always, in Portico
      continue;
    else
      l.dropped.push_back(p);
  }
  return l;
}

std::optional<std::vector<std::string>> nginx_key(std::string_view key) {
  std::vector<std::string> parts;
  while (!key.empty()) {
    if (key[0] != '$')
      return std::nullopt;
    key.remove_prefix(1);
    bool braced = !key.empty() && key[0] == '{';
    if (braced)
      key.remove_prefix(1);
    size_t n = 0;
    while (n < key.size() && (std::isalnum(static_cast<unsigned char>(key[n])) || key[n] == '_'))
      ++n;
    std::string v(key.substr(0, n));
    key.remove_prefix(n);
    if (braced) {
      if (key.empty() || key[0] != '}')
        return std::nullopt;
      key.remove_prefix(1);
    }
    auto dashed = [](std::string s) {
      for (char& c : s)
        c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    };
    if (v == "binary_remote_addr" || v == "remote_addr")
      parts.push_back("client");
    else if (v == "uri" || v == "document_uri")
      parts.push_back("path");
    else if (v.starts_with("http_") && v.size() > 5)
      parts.push_back("header:" + dashed(v.substr(5)));
    else if (v.starts_with("cookie_") && v.size() > 7)
      parts.push_back("cookie:" + v.substr(7));
    else if (v.starts_with("arg_") && v.size() > 4)
      parts.push_back("query:" + v.substr(4));
    else
      return std::nullopt;
  }
  if (parts.empty())
    return std::nullopt;
  return parts;
}

std::optional<std::string> nginx_rate(std::string_view s) {
  if (!(s.ends_with("r/s") || s.ends_with("r/m")))
    return std::nullopt;
  std::optional<int64_t> n = digits(s.substr(0, s.size() - 3));
  if (!n || *n == 0)
    return std::nullopt;
  return std::string(s);
}

std::optional<RedirectTarget> nginx_redirect_target(std::string_view url) {
  RedirectTarget t;
  if (url.starts_with("https://")) {
    t.scheme = "https";
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    t.scheme = "http";
    url.remove_prefix(7);
  } else if (url.starts_with("$scheme://")) {
    url.remove_prefix(10);
  } else if (url.starts_with("/")) {
    if (has_variable(url))
      return url == "$request_uri" ? std::optional<RedirectTarget>(t) : std::nullopt;
    t.path = std::string(url);
    return t;
  } else {
    return std::nullopt;
  }
  // HOST then the path: $request_uri (the request's), a fixed path, or nothing ("/").
  size_t end = 0;
  while (end < url.size() && url[end] != '/' && url[end] != '$')
    ++end;
  std::string_view host = url.substr(0, end);
  std::string_view rest = url.substr(end);
  if (host.empty()) {
    if (rest.starts_with("$host") || rest.starts_with("$http_host") ||
        rest.starts_with("$server_name")) {
      size_t n = rest.starts_with("$host") ? 5 : rest.starts_with("$http_host") ? 10 : 12;
      rest.remove_prefix(n);
    } else {
      return std::nullopt;
    }
  } else {
    t.host = std::string(host);
  }
  if (rest == "$request_uri" || rest == "$uri$is_args$args")
    return t;
  if (rest.empty()) {
    t.path = "/";
    return t;
  }
  if (has_variable(rest))
    return std::nullopt;
  t.path = std::string(rest);
  return t;
}

bool has_variable(std::string_view s) {
  return s.find('$') != std::string_view::npos;
}

namespace {
// The length of the valid UTF-8 sequence at s[i], or 0 (TOML strings are UTF-8 only).
size_t utf8_length(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xf0 && c <= 0xf4   ? 4
             : c >= 0xe0 && c <= 0xef ? 3
             : c >= 0xc2 && c < 0xe0  ? 2
                                      : 0;
  if (n == 0 || i + n > s.size())
    return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80)
      return 0;
  unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
  if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0) || (c == 0xf0 && c1 < 0x90) ||
      (c == 0xf4 && c1 >= 0x90))
    return 0; // overlong, surrogate or past U+10FFFF
  return n;
}
} // namespace

std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      size_t n = utf8_length(s, i);
      if (n == 0) {
        out += "\\ufffd";
      } else {
        out.append(s.substr(i, n));
        i += n - 1;
      }
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string toml_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + toml_string(v[i]);
  return out + "]";
}

std::string toml_number(double d) {
  if (d == std::floor(d) && std::fabs(d) < 1e15)
    return std::to_string(static_cast<int64_t>(d));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", d);
  std::string s = buf;
  while (s.back() == '0')
    s.pop_back();
  return s;
}

} // namespace portico::convert
