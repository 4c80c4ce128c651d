#pragma once
// Which of the codings a route offers to use for a request, from its Accept-Encoding fields
// (RFC 9110 12.5.3): the acceptable coding with the highest weight, ties broken by the route's
// order; none when the client accepts none of them, weighs identity above them, or sent no
// Accept-Encoding at all. Linear in the fields' length, with no allocation: a field of
// thousands of tokens costs one pass.
#include "compression/encoding.h"
#include "http/header.h"

#include <optional>
#include <span>

namespace portico::compression {

std::optional<Encoding> negotiate(std::span<const http::Header> request_fields,
                                  std::span<const Encoding> offered);

// A qvalue in thousandths ("0.5" is 500), or -1 when it is not one ("q=2", "q=0.0001", "q=1e3").
int parse_qvalue(std::string_view text);

} // namespace portico::compression
