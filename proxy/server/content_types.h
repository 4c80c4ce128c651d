#pragma once
// Content-Type by file name extension, for static files: the types browsers need to
// render, run (text/javascript, application/wasm) or play a file, and octet-stream otherwise.
#include <string_view>

namespace portico::server {

inline constexpr std::string_view kDefaultContentType = "application/octet-stream";

// The type for a file name or path ("a/b.CSS" -> "text/css; charset=utf-8"); the extension is
// matched case-insensitively. The view refers to static storage.
std::string_view content_type_for(std::string_view name);

} // namespace portico::server
