#include "http/framed_field.h"

#include <charconv>
#include <cstdint>

namespace portico::http {

void add_framed_field(RequestHead& r, Arena& a, std::string_view n, std::string_view v) {
  if (!n.empty() && n[0] == ':') {
    if (n == ":method")
      r.method = a.copy(v);
    else if (n == ":path")
      r.target = a.copy(v);
    else if (n == ":authority")
      r.authority = a.copy(v);
    else if (n == ":scheme")
      r.scheme = a.copy(v);
    else if (n == ":protocol")
      r.protocol = a.copy(v);
    return;
  }
  if (n == "content-length") {
    int64_t len = 0;
    auto res = std::from_chars(v.data(), v.data() + v.size(), len);
    if (res.ec == std::errc() && res.ptr == v.data() + v.size())
      r.content_length = len;
  }
  r.headers.push_back({a.copy(n), a.copy(v)});
}

} // namespace portico::http
