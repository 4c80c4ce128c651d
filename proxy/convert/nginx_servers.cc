// server blocks: their listens as listeners, their names as route hosts, their locations as
// routes in nginx's order of matching.
#include "convert/converter.h"

#include <algorithm>
#include <set>

namespace portico::convert {

namespace {

// nginx tries exact locations, then the longest prefix (a ^~ one ends the search), then
// regular expressions in the file's order, and falls back to the longest prefix: written in
// that order, Portico's first match agrees (but for a plain prefix longer than a ^~ one that
// both match, which is warned of).
int rank(const Location& l) {
  if (l.modifier == "=")
    return 0;
  if (l.modifier == "^~")
    return 1;
  if (l.modifier == "~" || l.modifier == "~*")
    return 2;
  return 3;
}

// nginx's regex finds a match anywhere unless anchored; Portico's matches the whole path.
std::string whole_path_regex(const Location& l) {
  std::string re = l.path;
  bool start = re.starts_with("^"), end = re.ends_with("$") && !re.ends_with("\\$");
  if (start)
    re.erase(0, 1);
  if (end)
    re.pop_back();
  return (l.modifier == "~*" ? "(?i)" : "") + std::string(start ? "" : ".*") + re +
         (end ? "" : ".*");
}

// A route's redirect: the code, and each part of the target that is not the request's own.
std::string redirect_value(const std::string& code, const RedirectTarget& t) {
  std::string v = "{ code = " + code;
  if (!t.scheme.empty())
    v += ", scheme = " + toml_string(t.scheme);
  if (!t.host.empty())
    v += ", host = " + toml_string(t.host);
  if (!t.path.empty())
    v += ", path = " + toml_string(t.path);
  return v + " }";
}

bool is_redirect_code(const std::string& s) {
  return s == "301" || s == "302" || s == "303" || s == "307" || s == "308";
}

} // namespace

ServerInfo Converter::read_server(const Directive& d, const Scope& http) {
  ServerInfo s;
  s.d = &d;
  s.scope = http.inner();
  std::vector<const Directive*> blocks;
  for (const auto& x : d.block) {
    if (x.name == "listen") {
      std::string why;
      if (std::optional<Listen> l = nginx_listen(x.args, &why)) {
        for (const auto& p : l->dropped)
          warn(x, "'" + p + "' is not carried over");
        s.listens.push_back(*l);
      } else {
        warn(x, why);
      }
    } else if (x.name == "server_name") {
      for (const auto& n : x.args) {
        if (n == "_" || n.empty() || n == "\"\"")
          continue;
        if (n.starts_with("~") || (n.find('*') != std::string::npos && !n.starts_with("*.")) ||
            has_variable(n))
          warn(x,
               "the name '" + n + "' is not carried over: Portico's hosts are exact or *.suffix");
        else if (n.starts_with(".")) {
          s.hosts.push_back(n.substr(1));
          s.hosts.push_back("*" + n);
        } else {
          s.hosts.push_back(n);
        }
      }
    } else if (x.name == "return") {
      s.ret = &x;
    } else if (x.name == "rewrite") {
      s.rewrites.push_back(&x);
    } else if (x.name == "location" && x.has_block) {
      blocks.push_back(&x);
    } else if (x.has_block) {
      not_carried(x);
    } else if (!scope_directive(x, s.scope)) {
      if (x.name == "ssl" && !x.args.empty() && x.args[0] == "on")
        for (auto& l : s.listens)
          l.ssl = true;
      else
        not_carried(x);
    }
  }
  if (s.listens.empty()) { // nginx's default: *:80 (as root)
    Listen any;
    any.address = "0.0.0.0:80";
    s.listens.push_back(any);
  }
  read_locations(d.block, s.scope, s);
  std::stable_sort(s.locations.begin(), s.locations.end(),
                   [](const Location& a, const Location& b) {
                     int ra = rank(a), rb = rank(b);
                     if (ra != rb)
                       return ra < rb;
                     return (ra == 1 || ra == 3) && a.path.size() > b.path.size();
                   });
  for (const auto& caret : s.locations)
    if (caret.modifier == "^~")
      for (const auto& plain : s.locations)
        if (plain.modifier.empty() && plain.path.size() > caret.path.size() &&
            plain.path.starts_with(caret.path))
          warn(*plain.d, "a longer prefix than the ^~ " + caret.path + " of line " +
                             std::to_string(caret.d->line) + ": Portico matches the ^~ one first");
  bool any_ssl = false, any_plain = false;
  for (const auto& l : s.listens)
    (l.ssl ? any_ssl : any_plain) = true;
  s.ssl_only = any_ssl && !any_plain;
  s.plain_only = any_plain && !any_ssl;
  if (s.scope.max_body) {
    if (!max_body_set_)
      put(out_.server, "max_body_bytes", toml_number(static_cast<double>(*s.scope.max_body)));
    else if (s.scope.max_body != http_max_body_)
      warn(d, "client_max_body_size differs between servers: Portico has one for all");
    max_body_set_ = true;
    http_max_body_ = s.scope.max_body;
  }
  return s;
}

void Converter::read_locations(const std::vector<Directive>& block, const Scope& outer,
                               ServerInfo& s) {
  for (const auto& x : block) {
    if (x.name != "location" || !x.has_block)
      continue;
    Location l;
    l.d = &x;
    if (x.args.size() == 2) {
      l.modifier = x.args[0];
      l.path = x.args[1];
    } else if (x.args.size() == 1) {
      l.path = x.args[0];
    }
    if (l.path.empty() || (!l.modifier.empty() && l.modifier != "=" && l.modifier != "^~" &&
                           l.modifier != "~" && l.modifier != "~*")) {
      warn(x, "this location is not carried over");
      continue;
    }
    l.scope = outer.inner();
    for (const auto& y : x.block) {
      if (y.name == "proxy_pass")
        l.proxy_pass = &y;
      else if (y.name == "return")
        l.ret = &y;
      else if (y.name == "rewrite")
        l.rewrites.push_back(&y);
      else if (y.name == "location")
        continue; // below, as locations of their own
      else if (y.has_block)
        not_carried(y);
      else if (!scope_directive(y, l.scope))
        not_carried(y);
      if (y.name == "client_max_body_size" && l.scope.max_body != outer.max_body)
        warn(y, "a body limit per location is not carried over: Portico has one for all");
    }
    if (l.path.starts_with("@"))
      s.named[l.path] = l;
    else
      s.locations.push_back(l);
    read_locations(x.block, l.scope, s);
  }
}

void Converter::emit_servers(std::vector<ServerInfo>& servers) {
  bool any_ssl = false, any_plain = false;
  // Each listen address's default server: the one marked default_server, else the first.
  std::map<std::string, std::pair<size_t, bool>> default_for;
  for (size_t i = 0; i < servers.size(); ++i)
    for (const auto& l : servers[i].listens) {
      (l.ssl ? any_ssl : any_plain) = true;
      auto it = default_for.find(l.address);
      if (it == default_for.end())
        default_for[l.address] = {i, l.default_server};
      else if (l.default_server && !it->second.second)
        it->second = {i, true};
    }
  for (const auto& [address, chosen] : default_for)
    servers[chosen.first].is_default = true;
  for (const auto& s : servers)
    for (const auto& l : s.listens)
      listener_for(s, l);
  auto scheme_of = [&](const ServerInfo& s) -> std::string {
    if (s.ssl_only && any_plain)
      return "https";
    if (s.plain_only && any_ssl)
      return "http";
    return "";
  };
  // Servers for their names first; then the default ones, for any name, last.
  for (const auto& s : servers)
    if (!s.is_default) {
      if (s.hosts.empty())
        warn(*s.d, "a server with no name Portico can take and that is no listen's default: "
                   "left out");
      else
        emit_server(s, s.hosts, scheme_of(s));
    }
  for (const auto& s : servers)
    if (s.is_default)
      emit_server(s, {""}, scheme_of(s));
}

void Converter::emit_server(const ServerInfo& s, const std::vector<std::string>& hosts,
                            const std::string& scheme) {
  std::vector<RouteOut> routes;
  for (const Directive* rw : s.rewrites) {
    RouteOut r;
    if (rewrite_route(*rw, r))
      routes.push_back(r);
  }
  if (s.ret) {
    RouteOut r;
    r.where = s.ret->where();
    if (return_route(*s.ret, r))
      routes.push_back(r);
    for (const auto& l : s.locations)
      warn(*l.d, "never reached: the server's return at line " + std::to_string(s.ret->line) +
                     " answers first");
  } else {
    bool root_location = false;
    for (const auto& l : s.locations) {
      for (const Directive* rw : l.rewrites) {
        RouteOut r;
        if (rewrite_route(*rw, r))
          routes.push_back(r);
      }
      RouteOut r;
      r.where = l.d->where();
      if (location_route(s, l, r))
        routes.push_back(r);
      root_location |= l.modifier.empty() && l.path == "/";
    }
    if (!root_location) {
      // What nginx does outside every location: the server's own root.
      Location whole;
      whole.d = s.d;
      whole.path = "/";
      whole.scope = s.scope;
      RouteOut r;
      r.where = s.d->where();
      r.note = "requests no location takes: the server's files";
      if (!s.scope.root.empty() || !s.scope.try_files.empty()) {
        if (location_route(s, whole, r))
          routes.push_back(r);
      } else if (!s.locations.empty()) {
        put(r.keys, "direct_response", "{ status = 404, body = \"\" }");
        r.note = "requests no location takes (nginx would look in its html directory)";
        routes.push_back(r);
      }
    }
  }
  for (const auto& h : hosts)
    for (auto r : routes) {
      r.host = h;
      r.scheme = scheme;
      out_.routes.push_back(r);
    }
}

bool Converter::location_route(const ServerInfo& s, const Location& l, RouteOut& r) {
  if (l.modifier == "=") {
    r.path_key = "path_exact";
    r.path = l.path;
  } else if (l.modifier == "~" || l.modifier == "~*") {
    r.path_key = "path_regex";
    r.path = whole_path_regex(l);
  } else {
    r.path = l.path;
  }
  if (l.ret)
    return return_route(*l.ret, r);
  if (l.proxy_pass) {
    std::string uri;
    std::optional<size_t> c = proxy_pass_cluster(*l.proxy_pass, &uri);
    if (!c)
      return false;
    put(r.keys, "cluster", toml_string(out_.clusters[*c].name));
    if (!uri.empty()) {
      if (r.path_key == "path_prefix")
        put(r.keys, "prefix_rewrite", toml_string(uri));
      else
        warn(*l.proxy_pass, "a URI on proxy_pass is carried over for prefix locations only");
    }
    give_timeouts(*c, l.scope, *l.proxy_pass);
    filters(l.scope, *l.d, r);
    return true;
  }
  const Scope& sc = l.scope;
  std::string st;
  if (!sc.alias.empty())
    st = "alias = " + toml_string(sc.alias);
  else if (!sc.root.empty())
    st = "root = " + toml_string(sc.root);
  else
    st = "root = \"/usr/share/nginx/html\""; // nginx's html directory on Debian
  if (!(sc.index.size() == 1 && sc.index[0] == "index.html"))
    st += ", index = " + toml_strings(sc.index);
  if (!sc.try_files.empty()) {
    std::vector<std::string> tf = sc.try_files;
    if (tf.back().starts_with("@")) {
      auto it = s.named.find(tf.back());
      std::optional<size_t> c;
      std::string uri;
      if (it != s.named.end() && it->second.proxy_pass)
        c = proxy_pass_cluster(*it->second.proxy_pass, &uri);
      if (!c) {
        warn(*l.d, "try_files' " + tf.back() + " is not a location that proxies: left out");
        return false;
      }
      tf.back() = "@upstream";
      put(r.keys, "cluster", toml_string(out_.clusters[*c].name));
      give_timeouts(*c, it->second.scope, *it->second.proxy_pass);
    }
    st += ", try_files = " + toml_strings(tf);
  }
  if (sc.expires)
    st += ", expires = " + toml_number(*sc.expires);
  if (sc.gzip_static)
    st += ", precompressed = true";
  put(r.keys, "static", "{ " + st + " }");
  filters(sc, *l.d, r);
  return true;
}

bool Converter::return_route(const Directive& d, RouteOut& r) {
  const auto& a = d.args;
  if (a.empty())
    return warn(d, "without a code"), false;
  std::string code = a[0], url;
  if (a[0].starts_with("http://") || a[0].starts_with("https://") || a[0].starts_with("$scheme")) {
    code = "302";
    url = a[0];
  } else if (is_redirect_code(a[0]) && a.size() == 2) {
    url = a[1];
  }
  if (!url.empty()) {
    std::optional<RedirectTarget> t = nginx_redirect_target(url);
    if (!t)
      return warn(d, "the target '" + url + "' is not carried over"), false;
    put(r.keys, "redirect", redirect_value(code, *t));
    return true;
  }
  std::optional<int64_t> status = nginx_size(code);
  if (!status || *status < 200 || *status > 599 || code.size() != 3)
    return warn(d, "the status '" + code + "' is not carried over"), false;
  std::string body = a.size() > 1 ? a[1] : "";
  if (has_variable(body))
    return warn(d, "a body with variables is not carried over"), false;
  put(r.keys, "direct_response", "{ status = " + code + ", body = " + toml_string(body) + " }");
  return true;
}

bool Converter::rewrite_route(const Directive& d, RouteOut& r) {
  const auto& a = d.args;
  r.where = d.where();
  if (a.size() != 3 || (a[2] != "permanent" && a[2] != "redirect"))
    return warn(d, "only a rewrite ending in permanent or redirect is carried over"), false;
  std::string re = a[0];
  bool anchored = re.starts_with("^");
  bool whole = anchored && re.ends_with("$");
  std::string literal =
      re.substr(anchored ? 1 : 0, re.size() - (anchored ? 1 : 0) - (whole ? 1 : 0));
  bool plain = anchored && literal.starts_with("/") &&
               literal.find_first_of("\\.*+?()[]{}|^$") == std::string::npos;
  bool everything = re == "^(.*)$" || re == "^" || re == "^/(.*)$" || re == "(.*)";
  std::string target = a[1];
  if (everything && (target.ends_with("$1") || target.ends_with("$request_uri")))
    target = target.substr(0, target.rfind('$')) + "$request_uri";
  else if (!plain)
    return warn(d, "only a rewrite of a literal path, or of every path, is carried over"), false;
  std::optional<RedirectTarget> t = nginx_redirect_target(target);
  if (!t)
    return warn(d, "the target '" + a[1] + "' is not carried over"), false;
  if (plain) {
    r.path_key = whole ? "path_exact" : "path_prefix";
    r.path = literal;
  }
  put(r.keys, "redirect", redirect_value(a[2] == "permanent" ? "301" : "302", *t));
  return true;
}

void Converter::listener_for(const ServerInfo& s, const Listen& l) {
  auto it = std::find_if(out_.listeners.begin(), out_.listeners.end(),
                         [&](const ListenerOut& o) { return o.address == l.address; });
  if (it == out_.listeners.end()) {
    ListenerOut o;
    o.address = l.address;
    o.where = s.d->where();
    out_.listeners.push_back(o);
    it = out_.listeners.end() - 1;
  }
  it->proxy_protocol |= l.proxy_protocol;
  if (!s.scope.access_log.empty() && it->access_log.empty()) {
    it->access_log = s.scope.access_log;
    it->access_log_format = s.scope.access_log_format;
  }
  if (!l.ssl)
    return;
  if (s.scope.certificate.empty() || s.scope.certificate_key.empty() ||
      has_variable(s.scope.certificate)) {
    warn(*s.d, "listen " + l.address + " ssl without a certificate Portico can take");
    return;
  }
  it->tls = true;
  if (!it->has_default_certificate && (s.is_default || l.default_server || it->sni.empty())) {
    if (!it->certificate.empty()) // a certificate taken before goes by SNI for its names
      it->sni.push_back({it->certificate_hosts, it->certificate, it->private_key});
    it->certificate_hosts = s.hosts;
    it->certificate = s.scope.certificate;
    it->private_key = s.scope.certificate_key;
    it->min_version = s.scope.protocols;
    it->ciphers = s.scope.ciphers;
    it->has_default_certificate = s.is_default || l.default_server;
  } else if (!s.hosts.empty()) {
    it->sni.push_back({s.hosts, s.scope.certificate, s.scope.certificate_key});
  }
  it->sni.erase(std::remove_if(it->sni.begin(), it->sni.end(),
                               [](const SniOut& x) { return x.server_names.empty(); }),
                it->sni.end());
}

void Converter::filters(const Scope& sc, const Directive& where, RouteOut& r) {
  std::vector<std::string> add;
  for (const auto& [name, value] : sc.set_headers) {
    if (name == "host" && (value == "$host" || value == "$http_host"))
      continue; // Portico passes the client's Host
    if ((name == "x-forwarded-for" && value == "$proxy_add_x_forwarded_for") ||
        (name == "x-forwarded-proto" && value == "$scheme"))
      continue; // [server] forwarded (on by default) writes these
    if (name == "upgrade" || name == "connection")
      continue; // WebSocket upgrades pass through Portico by themselves
    if (has_variable(value))
      warn(where, "proxy_set_header " + name + " " + value +
                      ": a value with variables is not "
                      "carried over");
    else
      add.push_back(toml_string(name) + " = " + toml_string(value));
  }
  auto table = [](const std::vector<std::string>& v) {
    std::string t = "{ ";
    for (size_t i = 0; i < v.size(); ++i)
      t += (i ? ", " : "") + v[i];
    return t + " }";
  };
  if (!add.empty())
    put(r.keys, "request_headers_add", table(add));
  std::vector<std::string> resp;
  for (const auto& [name, value] : sc.add_headers)
    if (has_variable(value))
      warn(where, "add_header " + name + ": a value with variables is not carried over");
    else
      resp.push_back(toml_string(name) + " = " + toml_string(value));
  if (!resp.empty())
    put(r.keys, "response_headers_add", table(resp));
  if (!sc.hide_headers.empty())
    put(r.keys, "response_headers_remove", toml_strings(sc.hide_headers));
  if (sc.gzip) {
    std::vector<std::string> types = {"text/html"}; // nginx always compresses text/html
    for (const auto& t : sc.gzip_types)
      if (std::find(types.begin(), types.end(), t) == types.end())
        types.push_back(t);
    std::string c = "{ encodings = [\"gzip\"], types = " + toml_strings(types);
    c += ", gzip_level = " + std::to_string(sc.gzip_level.value_or(1));
    c += ", min_length = " + std::to_string(sc.gzip_min_length.value_or(20));
    put(r.keys, "compress", c + " }");
  }
  std::vector<std::string> limits;
  for (const auto& l : sc.limit_req) {
    auto z = limit_zones_.find(l.zone);
    if (z == limit_zones_.end()) {
      warn(where, "limit_req zone=" + l.zone + " has no limit_req_zone carried over");
      continue;
    }
    std::string v = "{ name = " + toml_string(l.zone) + ", rate = " + toml_string(z->second.rate) +
                    ", key = " + toml_strings(z->second.key);
    if (l.burst)
      v += ", burst = " + std::to_string(l.burst);
    if (l.nodelay)
      v += ", nodelay = true";
    else if (l.delay)
      v += ", delay = " + std::to_string(l.delay);
    v += ", status = " + std::to_string(sc.limit_req_status.value_or(503));
    if (sc.limit_req_dry_run)
      v += ", dry_run = true";
    if (z->second.bytes / 64 > 65536) // nginx keeps about 64 bytes a key
      v += ", table_size = " + std::to_string(z->second.bytes / 64);
    limits.push_back(v + " }");
  }
  if (limits.size() == 1)
    put(r.keys, "rate_limit", limits[0]);
  else if (!limits.empty()) {
    std::string all = "[";
    for (size_t i = 0; i < limits.size(); ++i)
      all += (i ? ", " : "") + limits[i];
    put(r.keys, "rate_limit", all + "]");
  }
  if (!sc.proxy_cache.empty()) {
    auto z = cache_zones_.find(sc.proxy_cache);
    if (z == cache_zones_.end()) {
      warn(where, "proxy_cache " + sc.proxy_cache + " has no proxy_cache_path carried over");
    } else {
      // Portico keeps one directory per route: the zone's, then one beneath it for each more.
      std::string dir = z->second.path;
      if (z->second.routes++)
        dir += "/route-" + std::to_string(z->second.routes);
      std::string v = "{ disk = " + toml_string(dir);
      if (z->second.max_size)
        v += ", disk_size = " + std::to_string(*z->second.max_size);
      put(r.keys, "cache", v + " }");
    }
  }
}

} // namespace portico::convert
