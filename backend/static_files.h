#pragma once
// Static files under --document-root: index.html for directories, content types by extension,
// ETag and Last-Modified with 304, HEAD, and nothing outside the root.
#include "server/exchange.h"

#include <string>

namespace portico::backend {

class StaticFiles {
public:
  explicit StaticFiles(std::string root);
  bool ok() const { return !root_.empty(); }
  void serve(server::Exchange& ex);

private:
  std::string root_; // canonical, no trailing slash
};

} // namespace portico::backend
