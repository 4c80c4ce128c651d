#pragma once
// The key a request's responses are stored under: the parts of its URL a route chooses, and
// chosen request fields. Fields not chosen never reach the key: X-Forwarded-Host and the like
// cannot poison what others are sent.
#include "http/header.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace portico::cache {

struct KeyParts {
  bool scheme = true;
  bool host = true;
  bool path = true;
  bool query = true;
  std::vector<std::string> fields; // lower case
};

// The key of scheme://authority/target with fields, into out (reused: no allocation once it
// is large enough). The host is lower case and its port kept.
void build_key(const KeyParts& parts, std::string_view scheme, std::string_view authority,
               std::string_view target, std::span<const http::Header> fields, std::string& out);

} // namespace portico::cache
