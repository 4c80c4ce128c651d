#pragma once
// The pid file ([server] pid_file) and `portico -s`, which signals the process it names, as
// `nginx -s` does.
#include "core/expected.h"

#include <string>

namespace portico::proxy {

// Writes this process's pid to path (replacing what is there).
core::expected<void, std::string> write_pid_file(const std::string& path);
// Removes path if it still holds this process's pid (after a binary upgrade it holds the new
// process's).
void remove_pid_file_if_ours(const std::string& path);
// Sends sig to the pid in path; the error says what is wrong (no file, no such process...).
core::expected<int, std::string> signal_pid_file(const std::string& path, int sig);

} // namespace portico::proxy
