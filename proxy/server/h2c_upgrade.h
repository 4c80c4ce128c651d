#pragma once
// What an HTTP/1.1 request with "Upgrade: h2c" hands to the HTTP/2 session that replaces it
// (RFC 7540 3.2): the request, which becomes stream 1, and the decoded HTTP2-Settings.
#include "http/request_head.h"

#include <string>

namespace portico::server {

struct UpgradeToH2 {
  const http::RequestHead* head = nullptr;
  std::string settings; // SETTINGS frame payload
};

// HTTP2-Settings is base64url without padding (RFC 7540 3.2.1). False on any character outside
// that alphabet, an impossible length, or a payload that is not whole 6-byte entries.
bool decode_http2_settings(std::string_view b64url, std::string& out);

} // namespace portico::server
