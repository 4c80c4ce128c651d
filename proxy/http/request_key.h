#pragma once
// What names a request for a limit (the key it is counted under) or a consistent hash (the
// key that picks its endpoint): its client (the address trusted proxies vouch for), a header's
// value, a cookie's, a query parameter's, its path, its route, or several of those joined.
#include "http/request_head.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace portico::http {

struct KeyPart {
  enum Kind : uint8_t { CLIENT, HEADER, COOKIE, ROUTE, PATH, QUERY } kind = CLIENT;
  std::string name; // the header's (lower case), the cookie's or the query parameter's
  bool operator==(const KeyPart&) const = default;
};

// "client", "route", "path", "header:NAME", "cookie:NAME", "query:NAME"; nullopt for anything
// else.
std::optional<KeyPart> parse_key_part(std::string_view text);

// The text parse_key_part reads as part.
std::string to_string(const KeyPart& part);

// req's key for parts into out (the parts' values, each ended by a NUL); false when a part has
// no value (no such header or cookie, or an empty one): such a request is not counted, as
// nginx does not count an empty key.
bool build_key(std::span<const KeyPart> parts, const RequestHead& req, std::string_view client,
               std::string_view route, std::string& out);

// The value of cookie name in req's Cookie fields; empty when it has none.
std::string_view cookie_value(const RequestHead& req, std::string_view name);

} // namespace portico::http
