#include "cache/cache_key.h"

namespace portico::cache {

void build_key(const KeyParts& parts, std::string_view scheme, std::string_view authority,
               std::string_view target, std::span<const http::Header> fields, std::string& out) {
  out.clear();
  if (parts.scheme)
    out.append(scheme).append("://");
  if (parts.host)
    for (char c : authority)
      out.push_back(http::ascii_lower(c));
  size_t q = target.find('?');
  if (parts.path)
    out.append(target.substr(0, q));
  if (parts.query && q != std::string_view::npos)
    out.append(target.substr(q));
  for (const auto& name : parts.fields) {
    out.push_back('\n');
    out.append(name).push_back(':');
    bool first = true;
    for (const auto& f : fields)
      if (f.name == name) {
        if (!first)
          out.push_back(',');
        out.append(f.value);
        first = false;
      }
  }
}

} // namespace portico::cache
