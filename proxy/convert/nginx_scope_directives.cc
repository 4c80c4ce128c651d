// The directives a location inherits from its server and http blocks.
#include "convert/converter.h"
#include "http/header.h"

#include <algorithm>

namespace portico::convert {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// ssl_protocols as tls.min_version: Portico speaks TLS 1.2 and 1.3 only.
std::string min_version(const std::vector<std::string>& protocols) {
  bool v12 = std::find(protocols.begin(), protocols.end(), "TLSv1.2") != protocols.end();
  bool v13 = std::find(protocols.begin(), protocols.end(), "TLSv1.3") != protocols.end();
  return v12 ? "1.2" : v13 ? "1.3" : "";
}

} // namespace

namespace {

// A field set twice at one level keeps its first place and the last value: Portico's table of
// fields holds a name once.
void set_field(std::vector<std::pair<std::string, std::string>>& fields, std::string name,
               const std::string& value) {
  for (auto& [n, v] : fields)
    if (n == name) {
      v = value;
      return;
    }
  fields.emplace_back(std::move(name), value);
}

} // namespace

bool Converter::scope_directive(const Directive& d, Scope& s) {
  const auto& a = d.args;
  auto one = [&]() -> const std::string* {
    if (a.size() == 1)
      return &a[0];
    warn(d, "takes one value here");
    return nullptr;
  };
  // A header field named by a[0], set to a[1]; a name HTTP does not allow is no TOML key either
  // (bytes TOML cannot hold would make two names one key).
  auto field = [&](std::vector<std::pair<std::string, std::string>>& fields) {
    if (http::is_token(a[0]))
      set_field(fields, lower(a[0]), a[1]);
    else
      warn(d, "'" + a[0] + "' is not a header field name");
  };
  auto seconds = [&](std::optional<double>& to) {
    if (const std::string* v = one()) {
      if (auto t = nginx_seconds(*v))
        to = *t;
      else
        warn(d, "'" + *v + "' is not a time");
    }
    return true;
  };
  const std::string& n = d.name;
  if (n == "root" || n == "alias") {
    if (const std::string* v = one()) {
      if (has_variable(*v))
        warn(d, "a path with variables is not carried over");
      else
        (n == "root" ? s.root : s.alias) = *v;
      (n == "root" ? s.alias : s.root).clear();
    }
  } else if (n == "index") {
    s.index.clear();
    for (const auto& v : a)
      if (has_variable(v))
        warn(d, "an index with variables is not carried over");
      else
        s.index.push_back(v);
  } else if (n == "try_files") {
    s.try_files = a;
  } else if (n == "expires") {
    if (const std::string* v = one()) {
      if (*v == "off" || *v == "epoch" || *v == "max")
        warn(d, "expires " + *v + " is not carried over");
      else if (auto t = nginx_seconds(*v))
        s.expires = *t;
      else
        warn(d, "'" + *v + "' is not carried over");
    }
  } else if (n == "gzip_static") {
    s.gzip_static = !a.empty() && a[0] == "on";
  } else if (n == "gzip") {
    s.gzip = !a.empty() && a[0] == "on";
  } else if (n == "gzip_types") {
    s.gzip_types.clear();
    for (const auto& v : a)
      if (v == "*")
        warn(d, "'*' is not carried over: Portico compresses the types listed");
      else
        s.gzip_types.push_back(lower(v));
  } else if (n == "gzip_comp_level") {
    if (const std::string* v = one()) {
      auto level = nginx_size(*v);
      if (level && *level >= 1 && *level <= 9)
        s.gzip_level = static_cast<int>(*level);
      else
        warn(d, "'" + *v + "' is not a level from 1 to 9");
    }
  } else if (n == "gzip_min_length") {
    if (const std::string* v = one()) {
      if (auto b = nginx_size(*v))
        s.gzip_min_length = *b;
      else
        warn(d, "'" + *v + "' is not a size");
    }
  } else if (n == "gzip_proxied" || n == "gzip_disable" || n == "gzip_http_version" ||
             n == "gzip_buffers") {
    warn(d, "not carried over: Portico compresses every response of the listed types to a "
            "client that accepts it");
  } else if (n == "proxy_set_header") {
    if (!s.set_headers_here)
      s.set_headers.clear();
    s.set_headers_here = true;
    if (a.size() == 2)
      field(s.set_headers);
    else
      warn(d, "takes a name and a value");
  } else if (n == "add_header") {
    if (!s.add_headers_here)
      s.add_headers.clear();
    s.add_headers_here = true;
    if (a.size() == 2 || (a.size() == 3 && a[2] == "always"))
      field(s.add_headers);
    else
      warn(d, "takes a name, a value and perhaps 'always'");
  } else if (n == "proxy_hide_header") {
    if (const std::string* v = one())
      s.hide_headers.push_back(lower(*v));
  } else if (n == "limit_req") {
    if (!s.limit_req_here)
      s.limit_req.clear();
    s.limit_req_here = true;
    LimitReq l;
    for (const auto& v : a) {
      if (v.starts_with("zone="))
        l.zone = v.substr(5);
      else if (v.starts_with("burst="))
        l.burst = static_cast<int>(nginx_size(v.substr(6)).value_or(0));
      else if (v == "nodelay")
        l.nodelay = true;
      else if (v.starts_with("delay="))
        l.delay = static_cast<int>(nginx_size(v.substr(6)).value_or(0));
    }
    if (l.zone.empty())
      warn(d, "without zone=");
    else
      s.limit_req.push_back(l);
  } else if (n == "limit_req_status") {
    if (const std::string* v = one())
      s.limit_req_status = static_cast<int>(nginx_size(*v).value_or(503));
  } else if (n == "limit_req_dry_run") {
    s.limit_req_dry_run = !a.empty() && a[0] == "on";
  } else if (n == "limit_req_log_level") {
    warn(d, "not carried over: refusals are counted in portico_rate_limit_requests_total and "
            "the access log's $limit");
  } else if (n == "proxy_cache") {
    if (const std::string* v = one())
      s.proxy_cache = *v == "off" ? "" : *v;
  } else if (n == "proxy_cache_valid" || n == "proxy_cache_key" || n == "proxy_cache_use_stale" ||
             n == "proxy_cache_methods" || n == "proxy_cache_min_uses" ||
             n == "proxy_cache_bypass" || n == "proxy_no_cache" || n == "proxy_ignore_headers" ||
             n == "proxy_cache_revalidate" || n == "proxy_cache_background_update") {
    warn(d, "not carried over: Portico's cache follows the response's own freshness "
            "(Cache-Control, Expires) as RFC 9111 says (see cache.heuristic, "
            "cache.stale_if_error)");
  } else if (n == "proxy_connect_timeout") {
    return seconds(s.connect_timeout);
  } else if (n == "proxy_read_timeout") {
    return seconds(s.read_timeout);
  } else if (n == "proxy_send_timeout") {
    return seconds(s.send_timeout);
  } else if (n == "client_max_body_size") {
    if (const std::string* v = one()) {
      if (auto b = nginx_size(*v))
        s.max_body = *b == 0 ? -1 : *b;
      else
        warn(d, "'" + *v + "' is not a size");
    }
  } else if (n == "ssl_certificate") {
    if (const std::string* v = one())
      s.certificate = *v;
  } else if (n == "ssl_certificate_key") {
    if (const std::string* v = one())
      s.certificate_key = *v;
  } else if (n == "ssl_protocols") {
    s.protocols = min_version(a);
    for (const auto& v : a)
      if (v != "TLSv1.2" && v != "TLSv1.3")
        warn(d, v + " is not carried over: Portico speaks TLS 1.2 and 1.3 only");
    if (s.protocols.empty())
      warn(d, "names neither TLSv1.2 nor TLSv1.3");
  } else if (n == "ssl_ciphers") {
    if (const std::string* v = one())
      s.ciphers = *v;
  } else if (n == "access_log") {
    if (a.empty() || a[0] == "off") {
      s.access_log.clear();
    } else if (a[0].starts_with("syslog:")) {
      warn(d, "syslog is not carried over: Portico writes its access log to a file");
    } else {
      s.access_log = a[0];
      std::string format = a.size() > 1 ? a[1] : "combined";
      if (format != "combined")
        warn(d, "the format '" + format + "' is not carried over: written as combined");
      s.access_log_format = "combined";
    }
  } else {
    return false;
  }
  return true;
}

} // namespace portico::convert
