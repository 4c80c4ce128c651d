#pragma once
// Text from configuration or from clients placed inside a JSON string (or a quoted log field):
// quotes and backslashes are escaped, control bytes written as \u00XX, so the output stays one
// well-formed line whatever the input.
#include <string>
#include <string_view>

namespace portico::core {

inline void append_json_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7f) {
      out.append("\\u00");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
}

} // namespace portico::core
