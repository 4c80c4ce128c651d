#pragma once
// The file a disk store (disk_store.h) keeps one stored response in: a fixed prefix (a magic
// that names the format's version, then the head's and the body's lengths), the head (the key,
// the selecting fields, the status, the fields and what freshness was worked out) and the
// body, in that order. A file is written under a temporary name and renamed into place once
// whole; a file read back is believed only when its prefix's lengths add up to its size and its
// head reads to the end.
#include "cache/stored_response.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace portico::cache {

inline constexpr size_t kFilePrefix = 24; // magic, head length, body length: 8 bytes each

// The prefix and the head of r stored under key, for a body of body_size bytes.
void encode_file_head(std::string_view key, const StoredResponse& r, uint64_t body_size,
                      std::string& out);
// The head's and body's lengths from a file's first kFilePrefix bytes; false when they are
// not a stored response's of this version.
bool decode_file_prefix(std::string_view prefix, uint64_t& head_size, uint64_t& body_size);
// The key, the response (no body, no fields) and its fields (views into head) from the
// head_size bytes after the prefix; false when they do not read as one.
bool decode_file_head(std::string_view head, std::string& key, StoredResponse& r,
                      std::vector<http::Header>& fields);

} // namespace portico::cache
