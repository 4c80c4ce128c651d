#include "config/sections.h"
#include "http/header.h"

#include <algorithm>
#include <cctype>
#include <re2/re2.h>

namespace portico::config {

namespace {

// A table of field name -> value, names checked as tokens and lowered.
std::vector<std::pair<std::string, std::string>>
read_fields(Reader& r, const toml::table& t, std::string_view key, const std::string& w) {
  std::vector<std::pair<std::string, std::string>> out;
  const toml::table* ft = r.get_table(t, key, w);
  if (!ft)
    return out;
  for (const auto& [k, v] : *ft) {
    std::string name(k.str());
    auto value = v.value<std::string>();
    if (!http::is_token(name) || !value || value->find_first_of("\r\n") != std::string::npos) {
      r.error(v.source(), w + ": " + std::string(key) + " maps field names to string values");
      continue;
    }
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    out.emplace_back(name, *value);
  }
  return out;
}

std::vector<std::string> read_field_names(Reader& r, const toml::table& t, std::string_view key,
                                          const std::string& w) {
  std::vector<std::string> out = r.get_strings(t, key, w);
  for (auto& name : out)
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

// mirror = { cluster, fraction, host_suffix, max_body }.
void read_mirror(Reader& r, const toml::table& t, const Config& c, RouteConfig& rt,
                 const std::string& w) {
  const toml::table* m = r.get_table(t, "mirror", w);
  if (!m)
    return;
  const std::string mw = w + " mirror";
  rt.has_mirror = true;
  auto& mirror = rt.mirror;
  r.only_keys(*m, {"cluster", "fraction", "host_suffix", "max_body"}, mw);
  if (r.get_string(*m, "cluster", mirror.cluster, mw, true)) {
    bool found = false;
    for (size_t i = 0; i < c.clusters.size(); ++i)
      if (c.clusters[i].name == mirror.cluster) {
        mirror.cluster_index = i;
        found = true;
      }
    if (!found)
      r.error(m->get("cluster")->source(), mw + ": no cluster named '" + mirror.cluster + "'");
  }
  r.get_number(*m, "fraction", mirror.fraction, mw, 0, 1);
  if (r.get_string(*m, "host_suffix", mirror.host_suffix, mw) &&
      mirror.host_suffix.find_first_of(" \t\r\n:/") != std::string::npos)
    r.error(m->get("host_suffix")->source(), mw + ": host_suffix is part of a host name");
  r.get_number(*m, "max_body", mirror.max_body, mw, 0, 1e12);
  if (rt.websocket)
    r.error(m->source(), mw + ": a route with websocket is not mirrored");
}

} // namespace

void read_route(Reader& r, const toml::table& t, Config& c, RouteSettingsReaders settings) {
  const std::string w = "[[route]]";
  RouteConfig rt;
  // A key not built in is a filter's own, read by the filter that claims it.
  auto claim = [&](std::string_view key, const toml::node& v) {
    auto s = std::find_if(settings.begin(), settings.end(),
                          [&](const RouteSettingsReader& one) { return one.key == key; });
    if (s == settings.end())
      return false;
    if (auto value = s->read(r, v, w + " " + std::string(key)))
      rt.settings.emplace_back(std::string(key), std::move(value));
    return true;
  };
  r.only_keys(t,
              {"name",
               "host",
               "path_prefix",
               "path_exact",
               "path_regex",
               "scheme",
               "cluster",
               "websocket",
               "upgrade_timeout",
               "internal",
               "prefix_rewrite",
               "request_headers_add",
               "request_headers_remove",
               "response_headers_add",
               "response_headers_remove",
               "redirect",
               "direct_response",
               "timeout",
               "retry",
               "mirror",
               "stat_name"},
              w, claim);
  if (r.get_string(t, "name", rt.name, w) &&
      (rt.name.empty() || rt.name.find_first_of("\r\n") != std::string::npos))
    r.error(t.get("name")->source(), w + ": name is a non-empty string on one line");
  if (r.get_string(t, "stat_name", rt.stat_name, w) &&
      (rt.stat_name.empty() || rt.stat_name.find_first_of("\r\n") != std::string::npos))
    r.error(t.get("stat_name")->source(), w + ": stat_name is a non-empty string on one line");
  r.get_string(t, "host", rt.host, w);
  r.get_bool(t, "websocket", rt.websocket, w);
  r.get_bool(t, "internal", rt.internal, w);
  r.get_number(t, "upgrade_timeout", rt.upgrade_timeout, w, 0.001, 86400 * 7);
  int kinds = 0;
  if (r.get_string(t, "path_prefix", rt.path_prefix, w)) {
    ++kinds;
    if (rt.path_prefix.empty() || rt.path_prefix[0] != '/')
      r.error(t.get("path_prefix")->source(), w + ": path_prefix must start with '/'");
  }
  if (r.get_string(t, "path_exact", rt.path_exact, w)) {
    ++kinds;
    if (rt.path_exact.empty() || rt.path_exact[0] != '/')
      r.error(t.get("path_exact")->source(), w + ": path_exact must start with '/'");
  }
  if (r.get_string(t, "path_regex", rt.path_regex, w)) {
    ++kinds;
    re2::RE2 re(rt.path_regex, re2::RE2::Quiet);
    if (rt.path_regex.empty()) // the router would take it for no regex: every path
      r.error(t.get("path_regex")->source(), w + ": path_regex is empty (path_prefix = \"/\" "
                                                 "matches every path)");
    else if (!re.ok())
      r.error(t.get("path_regex")->source(), w + ": path_regex: " + re.error());
  }
  if (kinds > 1)
    r.error(t.source(), w + ": one of path_prefix, path_exact and path_regex, not several");
  if (kinds == 1 && !t.get("path_prefix"))
    rt.path_prefix.clear(); // matched by path_exact or path_regex instead
  if (r.get_string(t, "scheme", rt.scheme, w) && rt.scheme != "http" && rt.scheme != "https")
    r.error(t.get("scheme")->source(), w + ": scheme is \"http\" or \"https\"");
  if (r.get_string(t, "prefix_rewrite", rt.prefix_rewrite, w)) {
    rt.has_prefix_rewrite = true;
    if (!t.get("path_prefix"))
      r.error(t.get("prefix_rewrite")->source(), w + ": prefix_rewrite needs a path_prefix");
    else if (rt.prefix_rewrite.empty() || rt.prefix_rewrite[0] != '/')
      r.error(t.get("prefix_rewrite")->source(), w + ": prefix_rewrite must start with '/'");
  }
  rt.request_headers_add = read_fields(r, t, "request_headers_add", w);
  rt.response_headers_add = read_fields(r, t, "response_headers_add", w);
  rt.request_headers_remove = read_field_names(r, t, "request_headers_remove", w);
  rt.response_headers_remove = read_field_names(r, t, "response_headers_remove", w);
  if (const toml::table* rd = r.get_table(t, "redirect", w)) {
    const std::string rw = w + " redirect";
    rt.has_redirect = true;
    r.only_keys(*rd, {"scheme", "host", "path", "code"}, rw);
    if (r.get_string(*rd, "scheme", rt.redirect.scheme, rw) && rt.redirect.scheme != "http" &&
        rt.redirect.scheme != "https")
      r.error(rd->get("scheme")->source(), rw + ": scheme is \"http\" or \"https\"");
    r.get_string(*rd, "host", rt.redirect.host, rw);
    if (r.get_string(*rd, "path", rt.redirect.path, rw) &&
        (rt.redirect.path.empty() || rt.redirect.path[0] != '/'))
      r.error(rd->get("path")->source(), rw + ": path must start with '/'");
    r.get_number(*rd, "code", rt.redirect.code, rw, 301, 308);
    int code = rt.redirect.code;
    if (code != 301 && code != 302 && code != 303 && code != 307 && code != 308)
      r.error(rd->source(), rw + ": code is 301, 302, 303, 307 or 308");
  }
  if (const toml::table* dr = r.get_table(t, "direct_response", w)) {
    const std::string dw = w + " direct_response";
    rt.has_direct_response = true;
    r.only_keys(*dr, {"status", "body", "content_type"}, dw);
    r.get_number(*dr, "status", rt.direct_response.status, dw, 200, 599);
    r.get_string(*dr, "body", rt.direct_response.body, dw);
    r.get_string(*dr, "content_type", rt.direct_response.content_type, dw);
  }
  if (rt.has_redirect && rt.has_direct_response)
    r.error(t.source(), w + ": redirect or direct_response, not both");
  r.get_number(t, "timeout", rt.timeout, w, 0, 86400);
  if (const toml::table* rr = r.get_table(t, "retry", w)) {
    const std::string rw = w + " retry";
    r.only_keys(*rr, {"on_reset", "non_idempotent"}, rw);
    bool v = false;
    if (rr->get("on_reset")) {
      r.get_bool(*rr, "on_reset", v, rw);
      rt.retry_on_reset = v ? 1 : 0;
    }
    if (rr->get("non_idempotent")) {
      r.get_bool(*rr, "non_idempotent", v, rw);
      rt.retry_non_idempotent = v ? 1 : 0;
    }
  }
  bool answers_itself = rt.has_redirect || rt.has_direct_response;
  for (const auto& [key, value] : rt.settings)
    for (const auto& s : settings)
      if (s.key == key && s.answers && s.answers(value.get()))
        answers_itself = true;
  if (r.get_string(t, "cluster", rt.cluster, w, !answers_itself)) {
    bool found = false;
    for (size_t i = 0; i < c.clusters.size(); ++i)
      if (c.clusters[i].name == rt.cluster) {
        rt.cluster_index = i;
        found = true;
      }
    if (!found)
      r.error(t.get("cluster")->source(), w + ": no cluster named '" + rt.cluster + "'");
    else if (rt.websocket && c.clusters[rt.cluster_index].protocol != UpstreamProtocol::HTTP1)
      r.error(t.get("websocket")->source(),
              w + ": websocket needs a cluster that speaks http1 (an HTTP/1.1 Upgrade); '" +
                  rt.cluster + "' speaks " +
                  std::string(to_string(c.clusters[rt.cluster_index].protocol)));
  }
  read_mirror(r, t, c, rt, w);
  for (const auto& [key, value] : rt.settings)
    for (const auto& s : settings)
      if (s.key == key && s.check)
        s.check(r, *t.get(key), value.get(), rt, w + " " + key);
  c.routes.push_back(std::move(rt));
}

} // namespace portico::config
