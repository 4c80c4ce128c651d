#pragma once
// nginx's value syntaxes as Portico's: sizes ("10m"), times ("1m30s", "500ms"), listen
// addresses, rates ("10r/s"), limit and hash keys made of variables, redirect targets; and TOML
// string quoting for what the converter writes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::convert {

std::optional<int64_t> nginx_size(std::string_view s);   // bytes: 1024, 8k, 10m, 1g
std::optional<int64_t> nginx_count(std::string_view s);  // a plain number: 1, 16, 1000000
std::optional<double> nginx_seconds(std::string_view s); // 30, 30s, 500ms, 1m, 1h30m, 1d

struct Listen {
  std::string address; // Portico's: "0.0.0.0:80", "[::]:443", "127.0.0.1:8080", "unix:/p"
  bool ssl = false;
  bool default_server = false;
  bool proxy_protocol = false;
  std::vector<std::string> dropped; // parameters not carried over (backlog=..., deferred)
};
std::optional<Listen> nginx_listen(const std::vector<std::string>& args, std::string* why);

// An upstream server's or proxy_pass's address as a Portico endpoint: "unix:/p", "IP:PORT",
// "[v6]:PORT", "name:PORT" (default_port when none is given).
std::optional<std::string> nginx_endpoint(std::string_view s, int default_port);

// A key of variables ($binary_remote_addr$uri) as Portico's parts (["client", "path"]);
// nullopt when one has no equivalent.
std::optional<std::vector<std::string>> nginx_key(std::string_view key);

// "10r/s", "600r/m": as Portico writes them (the same); nullopt when malformed.
std::optional<std::string> nginx_rate(std::string_view s);

// A redirect target: https://$host$request_uri, https://example.com$request_uri, /path, ...
struct RedirectTarget {
  std::string scheme; // empty: the request's
  std::string host;   // empty: the request's
  std::string path;   // empty: the request's
};
std::optional<RedirectTarget> nginx_redirect_target(std::string_view url);

bool has_variable(std::string_view s);

std::string toml_string(std::string_view s);
std::string toml_strings(const std::vector<std::string>& v); // ["a", "b"]
std::string toml_number(double d);

} // namespace portico::convert
