#pragma once
// `portico convert-nginx FILE`: an nginx configuration, read by nginx_parser, as the Portico
// TOML that does the same for the common subset (listen, server_name, location, proxy_pass to
// upstream blocks, TLS, return, simple rewrites, header edits, static files, gzip, limit_req,
// proxy_cache, body size, timeouts), and a warning naming FILE:LINE for every directive that
// is not carried over, with why.
#include "convert/nginx_parser.h"

#include <string>
#include <vector>

namespace portico::convert {

struct Conversion {
  std::string toml;
  std::vector<std::string> warnings; // FILE:LINE: warning: ...
};

// source: the file's name, for the first comment line.
Conversion convert_nginx(const NginxConfig& config, const std::string& source);

} // namespace portico::convert
