#pragma once
// The admin dashboard page (metrics/dashboard.html), built into the binary: served at / by
// both portico's and portico-backend's admin endpoints.
#include <string_view>

namespace portico::metrics {

std::string_view dashboard_page();

} // namespace portico::metrics
