#pragma once
// A whole response made beforehand (an admin page: /metrics of ten thousand routes is tens of
// megabytes) handed to the connection as the client takes it, so that it stays below the
// response buffer's watermarks and is never cut at max_buffered_response_bytes.
#include "server/exchange.h"

#include <string>

namespace portico::server {

// As Exchange::respond; a body above the high watermark is kept here and written in pieces
// from on_response_writable.
void respond_streamed(Exchange& ex, int status, std::string_view content_type, std::string body);

} // namespace portico::server
