#include "config/sections.h"

#include <unordered_set>

namespace portico::config {

namespace {

// What a route matches, written as nginx writes a location: the host pattern ("*" for any),
// then the path prefix, "=" and the exact path, or "~" and the regex; a scheme in front.
std::string match_label(const RouteConfig& rt) {
  std::string out = rt.scheme.empty() ? "" : rt.scheme + "://";
  out += rt.host.empty() ? "*" : rt.host;
  if (!rt.path_exact.empty())
    out += "=" + rt.path_exact;
  else if (!rt.path_regex.empty())
    out += "~" + rt.path_regex;
  else
    out += rt.path_prefix;
  return out;
}

} // namespace

// Two routes with one label would be two series with one label set, and Prometheus keeps only
// one of them: a name is unique or an error, and a match another route has (a route behind a
// broader one, a twin for another listener) takes its position, "#3", after it.
void label_routes(Reader& r, const std::vector<const toml::table*>& tables, Config& c) {
  std::unordered_set<std::string> taken;
  for (size_t i = 0; i < c.routes.size(); ++i) {
    const std::string& name = c.routes[i].name;
    if (!name.empty() && !taken.insert(name).second)
      r.error(tables[i]->get("name")->source(), "[[route]]: name '" + name +
                                                    "' is another route's; route names are "
                                                    "unique, as their metric series must be");
    c.routes[i].label = name;
  }
  for (size_t i = 0; i < c.routes.size(); ++i) {
    RouteConfig& rt = c.routes[i];
    if (!rt.label.empty())
      continue;
    rt.label = match_label(rt);
    // A name may be spelt as a twin's label ("*/#2"): that position is taken, so again.
    while (!taken.insert(rt.label).second)
      rt.label += "#" + std::to_string(i + 1);
  }
}

} // namespace portico::config
