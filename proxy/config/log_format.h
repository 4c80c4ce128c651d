#pragma once
// An access log's line as a template of named fields, nginx's log_format: "$client
// [$time] \"$request\" $status", parsed once at load into literal text and fields.
#include "core/expected.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace portico::config {

enum class LogField : uint8_t {
  NONE, // the piece is its literal text only (the line's tail)
  TIME,
  TIME_ISO,
  CLIENT,
  PROTOCOL,
  METHOD,
  HOST,
  PATH,
  UPSTREAM_PATH,
  REQUEST,
  STATUS,
  BYTES_IN,
  BYTES_OUT,
  QUEUE,
  CONNECT,
  TTFB,
  TOTAL,
  UPSTREAM,
  RETRIES,
  ROUTE,
  USER_AGENT,
  REFERER,
  CACHE_STATUS,
  LIMIT,
  REQUEST_FIELD, // $http_NAME: any request field, NAME lower case with '-' for '_'
};

struct LogPiece {
  std::string literal; // written before the field
  LogField field = LogField::NONE;
  std::string field_name; // REQUEST_FIELD's
  bool operator==(const LogPiece&) const = default;
};

// The line Portico writes unless told otherwise, and nginx's "combined".
inline constexpr std::string_view kTextLogFormat =
    "$client - - [$time] \"$request\" $status $bytes_out in=$bytes_in proto=$protocol "
    "host=\"$host\" queue=$queue connect=$connect ttfb=$ttfb total=$total upstream=$upstream "
    "retries=$retries";
inline constexpr std::string_view kCombinedLogFormat =
    "$client - - [$time] \"$request\" $status $bytes_out \"$referer\" \"$user_agent\"";

// "$name" or "${name}"; "$$" is a '$'. An error names the unknown field and its offset.
core::expected<std::vector<LogPiece>, std::string> parse_log_format(std::string_view text);

// The field names, for the error a misspelt one gets.
std::string_view log_field_names();

} // namespace portico::config
