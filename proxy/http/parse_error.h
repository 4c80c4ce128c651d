#pragma once
// Why an HTTP/1 request was refused, and the status that answers it.
#include <cstdint>

namespace portico::http {

enum class ParseError : uint8_t {
  NONE,
  BAD_REQUEST,        // 400: malformed or ambiguous framing, bad fields
  URI_TOO_LONG,       // 414
  HEADERS_TOO_LARGE,  // 431: header section (or trailer section) over the limit, or too many fields
  BODY_TOO_LARGE,     // 413
  BAD_VERSION,        // 505: a well-formed HTTP version other than 1.0 and 1.1
  NOT_IMPLEMENTED,    // 501: a transfer coding other than chunked
  EXPECTATION_FAILED, // 417: an Expect other than 100-continue
};

// The status a server answers a parse error with.
int parse_error_status(ParseError e);

} // namespace portico::http
