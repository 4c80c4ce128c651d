#pragma once
// Text from configuration or from clients placed inside a JSON string (or a quoted log field):
// quotes and backslashes are escaped, control bytes written as \u00XX, and bytes that are not
// well-formed UTF-8 (a Host header may carry obs-text) written as \ufffd, so the output is one
// well-formed line of valid JSON whatever the input.
#include <string>
#include <string_view>

namespace portico::core {

// The length of the well-formed UTF-8 sequence starting s[i] (RFC 3629: no overlongs, no
// surrogates, nothing past U+10FFFF), or 0 when there is none.
inline size_t utf8_sequence(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = at(i);
  size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
  if (n == 0 || c < 0xc2 || c > 0xf4 || i + n > s.size())
    return 0;
  for (size_t k = 1; k < n; ++k)
    if ((at(i + k) & 0xc0) != 0x80)
      return 0;
  unsigned char d = at(i + 1);
  if ((c == 0xe0 && d < 0xa0) || (c == 0xed && d > 0x9f) || (c == 0xf0 && d < 0x90) ||
      (c == 0xf4 && d > 0x8f))
    return 0; // overlong, surrogate, or above U+10FFFF
  return n;
}

inline void append_json_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7f) {
      out.append("\\u00");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (size_t n = utf8_sequence(s, i)) {
      out.append(s.substr(i, n));
      i += n - 1;
    } else {
      out.append("\\ufffd"); // this byte; the next is looked at afresh
    }
  }
}

// s as a JSON string: quoted and escaped.
inline void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  append_json_escaped(out, s);
  out.push_back('"');
}

} // namespace portico::core
