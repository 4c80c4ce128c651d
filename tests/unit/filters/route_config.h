#pragma once
// A configuration of one listener, a cluster "app" and one [[route]] of the given lines, parsed
// as "c.toml" with every filter's route key: the route starts on line 6, so errors in a
// filter's key read c.toml:6+N:COL.
#include "config/config_loader.h"
#include "filters/registry.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::filters {

inline std::optional<config::Config> load_route(std::string_view route_lines,
                                                std::vector<std::string>* errors) {
  std::string text = R"([[listener]]
address = "127.0.0.1:8080"
[[cluster]]
name = "app"
endpoints = ["127.0.0.1:9"]
[[route]]
)" + std::string(route_lines) +
                     "\n";
  return config::parse_config(text, "c.toml", errors, route_settings());
}

} // namespace portico::filters
