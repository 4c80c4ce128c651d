#include "portico/convert_command.h"

#include "convert/nginx_converter.h"
#include "convert/nginx_parser.h"

#include <cstdio>
#include <string>

namespace portico::proxy {

int convert_nginx_command(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: portico convert-nginx FILE   (the TOML on stdout, warnings on stderr)\n",
               stderr);
    return 2;
  }
  std::string path = argv[1];
  convert::NginxConfig nginx = convert::parse_nginx_file(path);
  if (!nginx.errors.empty()) {
    for (const auto& e : nginx.errors)
      std::fprintf(stderr, "%s\n", e.c_str());
    std::fprintf(stderr, "portico: %s could not be converted\n", path.c_str());
    return 1;
  }
  convert::Conversion c = convert::convert_nginx(nginx, path);
  for (const auto& w : c.warnings)
    std::fprintf(stderr, "%s\n", w.c_str());
  std::fputs(c.toml.c_str(), stdout);
  std::fprintf(stderr, "portico: %s converted, %zu directives not carried over\n", path.c_str(),
               c.warnings.size());
  return 0;
}

} // namespace portico::proxy
