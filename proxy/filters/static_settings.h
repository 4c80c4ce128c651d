#pragma once
// A route's `static` key (filters/static_settings.cc reads it): files from a directory, served
// by the route itself (filters/static_files.cc).
#include "server/static_files.h"

namespace portico::filters {

struct StaticSettings {
  server::StaticOptions options; // options.root: the root's, or the alias's directory
  // alias: the route's path_prefix stands for the directory ("/assets/x.css" under alias
  // "/srv/a/" is /srv/a/x.css); root: the whole path is looked up beneath it.
  bool alias = false;
};

} // namespace portico::filters
