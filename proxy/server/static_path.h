#pragma once
// A request path on its way to a file name beneath a static root: decoded once, and refused
// where it could leave the root or name what is not meant to be served. These are the string
// checks; the open itself is bounded by the kernel too (openat2 RESOLVE_BENEATH).
#include <cstddef>
#include <string_view>

namespace portico::server {

// Percent-decodes in into out (cap bytes). Returns 0; 400 for a bad escape, a NUL (which would
// cut the path short at the syscall) or a backslash (a separator to some filesystems and
// tools, never needed in a URL path); 404 when it does not fit (ENAMETOOLONG, as nginx).
int decode_path(std::string_view in, char* out, size_t cap, size_t* len);

// A ".." segment, checked on the decoded path so that "%2e%2e" and "..%2f" count.
bool has_dot_dot_segment(std::string_view decoded);

// A segment that starts with '.' (".git", ".env", ".htpasswd"), the directory's own "." too.
bool has_dot_file(std::string_view decoded);

} // namespace portico::server
