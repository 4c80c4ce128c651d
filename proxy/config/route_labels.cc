#include "config/sections.h"

#include <unordered_map>
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

// A stat_name is a label of its own: spelt as another route's label (one of `labels`, every
// route's), two kinds of series would share one label set.
void group_route_stats(Reader& r, const std::vector<const toml::table*>& tables,
                       const std::unordered_set<std::string>& labels, Config& c) {
  size_t unnamed = 0;
  for (const RouteConfig& rt : c.routes)
    unnamed += rt.stat_name.empty();
  for (size_t i = 0; i < c.routes.size(); ++i)
    if (const std::string& s = c.routes[i].stat_name; !s.empty() && labels.count(s))
      r.error(tables[i]->get("stat_name")->source(),
              "[[route]]: stat_name '" + s + "' is a route's label; a stat_name names a group");
  bool by_cluster = unnamed > c.metrics.route_series_limit;
  if (by_cluster && c.metrics.route_series_limit > 0)
    r.warning(tables.front()->source(), std::to_string(unnamed) +
                                            " routes without a stat_name, more than [metrics] "
                                            "route_series_limit (" +
                                            std::to_string(c.metrics.route_series_limit) +
                                            "): they are counted per cluster, as route=\"" +
                                            kClusterStatLabel + "\"");
  std::unordered_map<std::string, size_t> groups; // label '\0' cluster -> index
  c.route_stats.clear();
  for (RouteConfig& rt : c.routes) {
    std::string label = !rt.stat_name.empty() ? rt.stat_name
                        : by_cluster          ? std::string(kClusterStatLabel)
                                              : rt.label;
    auto [at, added] = groups.try_emplace(label + '\0' + rt.cluster, c.route_stats.size());
    if (added)
      c.route_stats.push_back(
          {std::move(label), rt.cluster, rt.cluster.empty() ? SIZE_MAX : rt.cluster_index, {}});
    rt.stat_group = at->second;
  }
  c.route_stats.push_back({"none", "none", SIZE_MAX, {}});
  std::unordered_map<std::string, size_t> clusters_of;
  for (const RouteStatGroup& g : c.route_stats)
    ++clusters_of[g.label];
  for (RouteStatGroup& g : c.route_stats)
    g.name = clusters_of[g.label] > 1 ? g.label + "@" + g.cluster : g.label;
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
  group_route_stats(r, tables, taken, c);
}

} // namespace portico::config
