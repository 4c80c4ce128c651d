#pragma once
// Vary (RFC 9111 4.1): which request fields select a stored response, and their values in a
// normal form, so that requests that mean the same ("en, de" and "de,en" in Accept-Language)
// find the same variant.
#include "http/header.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace portico::cache {

// A response lists more than this many fields in Vary: not stored.
inline constexpr size_t kMaxVaryNames = 16;

// The field names a response's Vary lists, lower case, each once, into names. False when it
// lists "*" or too many: no request can be matched to it.
bool vary_names(std::span<const http::Header> fields, std::vector<std::string>& names);

// The selecting fields of a request (fields) for names, as one string: for each name, a mark
// for absent or present and the value normalised (field lines joined, whitespace around
// commas dropped; the Accept fields' members lower case and sorted). Two requests select the
// same variant when their strings are equal.
void vary_key(std::span<const std::string> names, std::span<const http::Header> fields,
              std::string& out);

} // namespace portico::cache
