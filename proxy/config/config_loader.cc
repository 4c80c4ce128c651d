#include "config/config_loader.h"

#include "config/sections.h"
#include "core/histogram_bounds.h"

#include <fstream>
#include <sstream>

namespace portico::config {

namespace {

// toml++ reads `address = 127.0.0.1:8080` as a broken date or time, and says so ("Error while
// parsing time"): when the value on the failing line is bare text that is no number, boolean,
// array or table, the error says what was meant.
std::string unquoted_hint(std::string_view text, size_t line) {
  size_t at = 0;
  for (size_t n = 1; n < line && at != std::string_view::npos; ++n) {
    at = text.find('\n', at);
    if (at != std::string_view::npos)
      ++at;
  }
  if (at == std::string_view::npos)
    return "";
  std::string_view l = text.substr(at, text.find('\n', at) - at);
  size_t eq = l.find('=');
  if (eq == std::string_view::npos)
    return "";
  std::string_view key = l.substr(0, eq), value = l.substr(eq + 1);
  auto trim = [](std::string_view& s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
      s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
      s.remove_suffix(1);
  };
  if (size_t hash = value.find(" #"); hash != std::string_view::npos)
    value = value.substr(0, hash);
  trim(key);
  trim(value);
  if (value.empty() || std::string_view("\"'[{").find(value.front()) != std::string_view::npos ||
      value == "true" || value == "false")
    return "";
  bool number = value.find_first_not_of("0123456789+-._eE") == std::string_view::npos;
  if (number)
    return "";
  return " (a text value is a quoted string: " + std::string(key) + " = \"" + std::string(value) +
         "\")";
}

} // namespace

std::optional<Config> parse_config(std::string_view text, const std::string& path,
                                   std::vector<std::string>* errors,
                                   RouteSettingsReaders settings) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    errors->push_back(path + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                      ": " + std::string(e.description()) + unquoted_hint(text, at.line));
    return std::nullopt;
  }
  Reader r(path, errors);
  Config c;
  c.path = path;
  r.only_keys(root, {"server", "listener", "admin", "metrics", "cluster", "route", "log"},
              "the top level");
  if (const toml::table* l = r.get_table(root, "log", "top level")) {
    r.only_keys(*l, {"level", "file"}, "[log]");
    std::string level;
    if (r.get_string(*l, "level", level, "[log]") &&
        !core::log::parse_level(level.c_str(), &c.log.level))
      r.error(l->get("level")->source(),
              "[log]: level is \"debug\", \"info\", \"warn\" or \"error\"");
    if (r.get_string(*l, "file", c.log.file, "[log]"))
      c.log.file = r.resolve(c.log.file);
  }
  if (const toml::table* s = r.get_table(root, "server", "top level"))
    read_server(r, *s, c.server);
  for (const toml::table* t : r.get_tables(root, "listener"))
    read_listener(r, *t, c);
  if (c.listeners.empty())
    r.error(root.source(), "at least one [[listener]] is required");
  read_admin(r, root, c);
  if (const toml::table* m = r.get_table(root, "metrics", "top level"))
    read_metrics(r, *m, c.metrics);
  else
    c.metrics.buckets = core::default_bounds();
  // Reserved to the count: grown by doubling, 10,000 routes would hold room for 16,384 (a
  // RouteConfig is ~690 bytes) for the whole life of the configuration.
  const std::vector<const toml::table*> cluster_tables = r.get_tables(root, "cluster");
  c.clusters.reserve(cluster_tables.size());
  for (const toml::table* t : cluster_tables)
    read_cluster(r, *t, c);
  // Routes refer to clusters by name: read after every cluster is known.
  const std::vector<const toml::table*> route_tables = r.get_tables(root, "route");
  c.routes.reserve(route_tables.size());
  for (const toml::table* t : route_tables)
    read_route(r, *t, c, settings);
  label_routes(r, route_tables, c);
  if (c.routes.empty())
    r.error(root.source(), "at least one [[route]] is required");
  if (r.failed())
    return std::nullopt;
  c.warnings = std::move(r.warnings);
  return c;
}

std::optional<Config> load_config(const std::string& path, std::vector<std::string>* errors,
                                  RouteSettingsReaders settings) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors->push_back(path + ":1:1: cannot open the file");
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path, errors, settings);
}

} // namespace portico::config
