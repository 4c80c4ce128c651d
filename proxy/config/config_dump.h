#pragma once
// The effective configuration as TOML (portico -T): every key with its value, defaults filled
// in, in the loader's own key names, so the output loads again to the same Config.
#include "config/config.h"

#include <string>

namespace portico::config {

std::string dump_config(const Config& c);

} // namespace portico::config
