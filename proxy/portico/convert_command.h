#pragma once
// `portico convert-nginx FILE`: the Portico configuration for an nginx one on stdout, a
// warning per directive not carried over on stderr (FILE:LINE: warning: ...). Exit 0 when the
// file was read (with or without warnings), 1 when it could not be, 2 on a usage error.

namespace portico::proxy {

int convert_nginx_command(int argc, char** argv); // argv[0] is "convert-nginx"

} // namespace portico::proxy
