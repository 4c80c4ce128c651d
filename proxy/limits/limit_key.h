#pragma once
// What a request is counted under by a limit: its client (the address trusted proxies vouch
// for), a header's value, a cookie's, its route, or several of those joined.
#include "http/request_head.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace portico::limits {

struct KeyPart {
  enum Kind : uint8_t { CLIENT, HEADER, COOKIE, ROUTE } kind = CLIENT;
  std::string name; // the header's (lower case) or the cookie's
};

// "client", "route", "header:NAME", "cookie:NAME"; nullopt for anything else.
std::optional<KeyPart> parse_key_part(std::string_view text);

// req's key for parts into out (the parts' values, each ended by a NUL); false when a part has
// no value (no such header or cookie, or an empty one): such a request is not counted, as
// nginx does not count an empty key.
bool build_key(std::span<const KeyPart> parts, const http::RequestHead& req,
               std::string_view client, std::string_view route, std::string& out);

// The value of cookie name in req's Cookie fields; empty when it has none.
std::string_view cookie_value(const http::RequestHead& req, std::string_view name);

} // namespace portico::limits
