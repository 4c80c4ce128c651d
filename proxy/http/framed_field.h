#pragma once
// One decoded field of an HTTP/2 or HTTP/3 request's header section, into its RequestHead: it
// was judged already (HTTP/2 by http/h2_request_rules.h, HTTP/3 by nghttp3); here it is only
// put where it belongs.
#include "http/arena.h"
#include "http/request_head.h"

#include <string_view>

namespace portico::http {

// Pseudo-fields to their members (an unknown one ignored); any other field copied into the
// arena and appended, content-length also parsed into content_length when it is a number.
void add_framed_field(RequestHead& r, Arena& a, std::string_view name, std::string_view value);

} // namespace portico::http
