#pragma once
// What an nginx location inherits from its server and http blocks, as convert-nginx tracks
// it. Lists (proxy_set_header, add_header, limit_req) are inherited only by a level that sets
// none of its own, as nginx does.
#include "convert/nginx_parser.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace portico::convert {

struct LimitReq {
  std::string zone;
  int burst = 0;
  bool nodelay = false;
  int delay = 0;
};

struct Scope {
  // Static files.
  std::string root, alias;
  std::vector<std::string> index;
  std::vector<std::string> try_files;
  std::optional<double> expires;
  bool gzip_static = false;
  // Compression.
  bool gzip = false;
  std::vector<std::string> gzip_types;
  std::optional<int> gzip_level;
  std::optional<int64_t> gzip_min_length;
  // Header edits: (name, value).
  std::vector<std::pair<std::string, std::string>> set_headers, add_headers;
  std::vector<std::string> hide_headers;
  bool set_headers_here = false, add_headers_here = false, limit_req_here = false;
  // Limits and the cache.
  std::vector<LimitReq> limit_req;
  std::optional<int> limit_req_status;
  bool limit_req_dry_run = false;
  std::string proxy_cache;
  // The upstream's timeouts (given to the cluster a location proxies to).
  std::optional<double> connect_timeout, read_timeout, send_timeout;
  std::optional<int64_t> max_body;
  // TLS (server and http level).
  std::string certificate, certificate_key, protocols, ciphers;
  std::string access_log, access_log_format;

  // A copy for a block one level in: lists start over at the first of their own.
  Scope inner() const {
    Scope s = *this;
    s.set_headers_here = s.add_headers_here = s.limit_req_here = false;
    return s;
  }
};

} // namespace portico::convert
