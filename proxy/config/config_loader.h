#pragma once
// Reads a TOML file into a validated Config. Every problem found is reported, each as
// "FILE:LINE:COL: message", not just the first, so `portico -t` shows them all at once.
#include "config/config.h"
#include "config/route_settings.h"

#include <optional>

namespace portico::config {

// settings: the [[route]] keys filters claim (the daemon's filters::route_settings()); any
// other key not built in is an error.
std::optional<Config> load_config(const std::string& path, std::vector<std::string>* errors,
                                  RouteSettingsReaders settings = {});
// The same from text (tests, fuzzing); path only names the source in messages.
std::optional<Config> parse_config(std::string_view text, const std::string& path,
                                   std::vector<std::string>* errors,
                                   RouteSettingsReaders settings = {});

} // namespace portico::config
