#include "server/static_path.h"

#include <charconv>

namespace portico::server {

int decode_path(std::string_view in, char* out, size_t cap, size_t* len) {
  size_t n = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      unsigned byte = 0;
      const char* hex = in.data() + i + 1;
      if (i + 2 >= in.size() || std::from_chars(hex, hex + 2, byte, 16).ptr != hex + 2)
        return 400;
      c = static_cast<char>(byte);
      i += 2;
    }
    if (c == '\0' || c == '\\')
      return 400;
    if (n >= cap)
      return 404;
    out[n++] = c;
  }
  *len = n;
  return 0;
}

namespace {

template <typename F> bool any_segment(std::string_view path, F&& f) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos)
      end = path.size();
    if (f(path.substr(start, end - start)))
      return true;
    start = end + 1;
  }
  return false;
}

} // namespace

bool has_dot_dot_segment(std::string_view decoded) {
  return any_segment(decoded, [](std::string_view s) { return s == ".."; });
}

bool has_dot_file(std::string_view decoded) {
  return any_segment(decoded, [](std::string_view s) { return s.starts_with('.'); });
}

} // namespace portico::server
