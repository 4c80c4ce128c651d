#pragma once
// A name-value pair for nghttp2 from views (nghttp2 copies them unless told not to).
#include <nghttp2/nghttp2.h>
#include <string_view>

namespace portico::http {

inline nghttp2_nv make_nv(std::string_view name, std::string_view value,
                          uint8_t flags = NGHTTP2_NV_FLAG_NONE) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          flags};
}

} // namespace portico::http
