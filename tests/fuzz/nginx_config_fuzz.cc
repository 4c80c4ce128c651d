// convert-nginx on arbitrary nginx configuration text: the parser ends with directives or
// errors (never a crash, a hang or unbounded work), and whatever it reads, the converter
// writes TOML that parses. An include names the same text again (bounded by the parser's
// limits) or, for a path with "missing" in it, a file that cannot be read.
#include "convert/nginx_converter.h"
#include "convert/nginx_parser.h"

#include <cstdint>
#include <cstdlib>
#include <string>

#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024)
    return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  portico::convert::FileReader read = [&](const std::string& path,
                                          std::string* why) -> std::optional<std::string> {
    if (path.find("missing") != std::string::npos) {
      *why = "No such file or directory";
      return std::nullopt;
    }
    return text;
  };
  portico::convert::GlobExpander expand = [](const std::string& pattern) {
    return std::vector<std::string>{pattern};
  };
  auto nginx = portico::convert::parse_nginx(text, "/etc/nginx/nginx.conf", read, expand);
  if (!nginx.errors.empty())
    return 0;
  auto out = portico::convert::convert_nginx(nginx, "/etc/nginx/nginx.conf");
  try {
    (void)toml::parse(out.toml);
  } catch (const toml::parse_error& e) {
    std::fprintf(stderr, "converted TOML does not parse: %s\n%s\n", e.what(), out.toml.c_str());
    std::abort();
  }
  return 0;
}
