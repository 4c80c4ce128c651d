#pragma once
// The files portico's logs go to (access logs, the error log): opened once for appending,
// whole lines written with one write(2) each, and after a rotation (USR1) reopened onto the
// descriptor the writers already hold, so that none of them is told anything.
#include <string>

namespace portico::proxy {

// -1 with errno set when it cannot be opened.
int open_log_file(const std::string& path);
// Opens path anew and puts it under fd in one step (dup3): no line is lost or split, and until
// then lines go to the renamed file. False with errno set; fd is unchanged then.
bool reopen_log_file(const std::string& path, int fd);

} // namespace portico::proxy
