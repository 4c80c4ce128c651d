#include "server/h2c_upgrade.h"

namespace portico::server {

namespace {
int b64url_value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '-')
    return 62;
  if (c == '_')
    return 63;
  return -1;
}
} // namespace

bool decode_http2_settings(std::string_view s, std::string& out) {
  while (!s.empty() && s.back() == '=')
    s.remove_suffix(1);
  out.clear();
  if (s.size() % 4 == 1)
    return false; // no byte count encodes to this many characters
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    int v = b64url_value(c);
    if (v < 0)
      return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  // A settings payload is a whole number of 6-byte entries.
  return out.size() % 6 == 0;
}

} // namespace portico::server
