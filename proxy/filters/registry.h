#pragma once
// Every filter the proxy has, in run order (registry.cc).
#include "routing/filter_registry.h"

namespace portico::filters {

routing::FilterRegistry registry();

} // namespace portico::filters
