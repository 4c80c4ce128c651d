#pragma once
// Content-Type by file name extension, for static files: the types browsers need to
// render, run (text/javascript, application/wasm) or play a file, and octet-stream otherwise.
#include <string>
#include <string_view>
#include <unordered_map>

namespace portico::server {

inline constexpr std::string_view kDefaultContentType = "application/octet-stream";

// The type for a file name or path ("a/b.CSS" -> "text/css; charset=utf-8"); the extension is
// matched case-insensitively: the built-in table first (it gives text a charset, and JavaScript
// and WebAssembly the types browsers insist on), then /etc/mime.types when the system has one.
// The view refers to storage that lives as long as the process.
std::string_view content_type_for(std::string_view name);

// Extension -> type from a mime.types file ("type ext ext ...", '#' comments), lower-cased;
// empty when it cannot be read.
std::unordered_map<std::string, std::string> read_mime_types(const char* path);

} // namespace portico::server
