#pragma once
// nginx's configuration syntax, read into a tree of directives for `portico convert-nginx`:
// words (bare, "double" or 'single' quoted, with nginx's backslash escapes), `;` ending a
// directive, `{ }` its block, `#` comments; `include` (a path or a glob, relative paths from
// the main file's directory, as nginx's conf prefix) is replaced by the directives it names.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::convert {

struct Directive {
  std::string name;
  std::vector<std::string> args;
  std::string file; // where it was written, for warnings: FILE:LINE
  int line = 0;
  bool has_block = false;
  std::vector<Directive> block;

  std::string where() const { return file + ":" + std::to_string(line); }
};

struct NginxConfig {
  std::vector<Directive> directives;
  std::vector<std::string> errors; // FILE:LINE:COL: message; parsing stops at the first
};

// Reads one file's text (nullopt: cannot be read, with why).
using FileReader =
    std::function<std::optional<std::string>(const std::string& path, std::string* error)>;
// The paths a glob names, sorted (a path without wildcards: itself).
using GlobExpander = std::function<std::vector<std::string>(const std::string& pattern)>;

// text as the contents of file; includes are read through the two functions.
NginxConfig parse_nginx(std::string_view text, const std::string& file, const FileReader& read,
                        const GlobExpander& expand);
// The file on disk, its includes read from disk.
NginxConfig parse_nginx_file(const std::string& path);

} // namespace portico::convert
