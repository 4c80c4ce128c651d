#pragma once
// [[route]] keys that filters claim for themselves. A filter whose configuration no built-in
// route key holds names its key and a reader (filters/registry.cc); the loader hands the
// reader that key's value, which it reads and checks through Reader (errors with
// FILE:LINE:COL, like every other key), and keeps what it returns on the route
// (RouteConfig::settings_for) for the filter's factory. config/ knows no filter by name: the
// daemon passes the filters' readers to load_config.
#include "config/reader.h"

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace portico::config {

struct RouteConfig;

struct RouteSettingsReader {
  std::string_view key; // the [[route]] key, never one of the built-in ones
  // The value read, or null after reporting what is wrong with it.
  std::shared_ptr<const void> (*read)(Reader& r, const toml::node& value, const std::string& where);
  // Whether the route then answers its requests itself, as a redirect does, and needs no
  // cluster (null: never).
  bool (*answers)(const void* settings) = nullptr;
  // Checks the value against the rest of its route once the route is read (null: nothing to).
  void (*check)(Reader& r, const toml::node& value, const void* settings, const RouteConfig& route,
                const std::string& where) = nullptr;
};

using RouteSettingsReaders = std::span<const RouteSettingsReader>;

} // namespace portico::config
