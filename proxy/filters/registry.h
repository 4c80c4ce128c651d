#pragma once
// Every filter the proxy has, in run order (registry.cc).
#include "config/route_settings.h"
#include "routing/filter_registry.h"

#include <vector>

namespace portico::filters {

routing::FilterRegistry registry();
// The [[route]] keys the filters claim, with their readers: for config::load_config.
config::RouteSettingsReaders route_settings();
// The same for any list of filter kinds (tests).
std::vector<config::RouteSettingsReader> route_settings_of(routing::FilterRegistry kinds);

} // namespace portico::filters
