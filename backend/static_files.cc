#include "static_files.h"

#include <climits>
#include <cstdlib>

namespace portico::backend {

StaticFiles::StaticFiles(std::string root) {
  char buf[PATH_MAX];
  if (::realpath(root.c_str(), buf))
    root_ = buf;
}

void StaticFiles::serve(server::Exchange& ex) { ex.respond(404, "text/plain", "not found\n"); }

} // namespace portico::backend
