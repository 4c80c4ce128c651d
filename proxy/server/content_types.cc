#include "server/content_types.h"

#include "http/header.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace portico::server {

namespace {

struct ExtensionType {
  std::string_view extension;
  std::string_view type;
};

// Text types carry a charset so that browsers do not guess one. Most frequent first: the table
// is searched in order, and only when a file enters the cache.
constexpr ExtensionType kTypes[] = {
    {"html", "text/html; charset=utf-8"},
    {"css", "text/css; charset=utf-8"},
    {"js", "text/javascript; charset=utf-8"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"svg", "image/svg+xml"},
    {"webp", "image/webp"},
    {"gif", "image/gif"},
    {"ico", "image/x-icon"},
    {"json", "application/json"},
    {"woff2", "font/woff2"},
    {"woff", "font/woff"},
    {"mjs", "text/javascript; charset=utf-8"},
    {"htm", "text/html; charset=utf-8"},
    {"txt", "text/plain; charset=utf-8"},
    {"xml", "text/xml; charset=utf-8"},
    {"wasm", "application/wasm"}, // WebAssembly.instantiateStreaming insists on this type
    {"pdf", "application/pdf"},
    {"mp4", "video/mp4"},
    {"webm", "video/webm"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"map", "application/json"},
    {"csv", "text/csv; charset=utf-8"},
    {"md", "text/markdown; charset=utf-8"},
    {"avif", "image/avif"},
    {"mp3", "audio/mpeg"},
    {"ttf", "font/ttf"},
    {"otf", "font/otf"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Read once, on the first file served that the built-in table does not know.
const std::unordered_map<std::string, std::string>& system_types() {
  static const auto types = read_mime_types("/etc/mime.types");
  return types;
}

} // namespace

std::unordered_map<std::string, std::string> read_mime_types(const char* path) {
  std::unordered_map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string type, ext;
    if (!(words >> type) || type.find('/') == std::string::npos)
      continue;
    while (words >> ext)
      out.emplace(lower(ext), type); // the first line to name an extension wins
  }
  return out;
}

std::string_view content_type_for(std::string_view name) {
  size_t slash = name.rfind('/');
  if (slash != std::string_view::npos)
    name.remove_prefix(slash + 1);
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) // "README", ".profile": no extension
    return kDefaultContentType;
  std::string_view ext = name.substr(dot + 1);
  for (const auto& t : kTypes)
    if (http::iequals(ext, t.extension))
      return t.type;
  const auto& system = system_types();
  auto it = ext.size() <= 32 ? system.find(lower(ext)) : system.end();
  return it == system.end() ? kDefaultContentType : std::string_view(it->second);
}

} // namespace portico::server
