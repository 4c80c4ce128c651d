#include "cache/vary.h"

#include <algorithm>

namespace portico::cache {

namespace {

// Fields whose members' order and case mean nothing beyond their weights, which stay with
// each member: sorting them loses no meaning.
bool negotiation_field(std::string_view name) {
  return name == "accept" || name == "accept-language" || name == "accept-encoding" ||
         name == "accept-charset";
}

void split_members(std::string_view v, std::vector<std::string_view>& out) {
  while (true) {
    size_t comma = v.find(',');
    std::string_view m = http::trim_ows(v.substr(0, comma));
    if (!m.empty())
      out.push_back(m);
    if (comma == std::string_view::npos)
      return;
    v.remove_prefix(comma + 1);
  }
}

} // namespace

bool vary_names(std::span<const http::Header> fields, std::vector<std::string>& names) {
  names.clear();
  std::string lower;
  for (const auto& f : fields) {
    if (f.name != "vary")
      continue;
    std::vector<std::string_view> members;
    split_members(f.value, members);
    for (std::string_view m : members) {
      if (m == "*")
        return false;
      http::assign_lower(lower, m);
      if (std::find(names.begin(), names.end(), lower) == names.end()) {
        if (names.size() == kMaxVaryNames)
          return false;
        names.push_back(lower);
      }
    }
  }
  std::sort(names.begin(), names.end());
  return true;
}

void vary_key(std::span<const std::string> names, std::span<const http::Header> fields,
              std::string& out) {
  out.clear();
  thread_local std::vector<std::string_view> members;
  for (const auto& name : names) {
    members.clear();
    bool present = false;
    for (const auto& f : fields)
      if (f.name == name) {
        present = true;
        split_members(f.value, members);
      }
    out.push_back(present ? '+' : '-');
    if (negotiation_field(name)) {
      // Each member without spaces ("de; q=0.5" and "de;q=0.5" are one) and in lower case,
      // in one buffer, then in order: per-thread buffers, as a lookup on every hit makes this.
      thread_local std::string buf;
      thread_local std::vector<size_t> ends;
      thread_local std::vector<std::string_view> sorted;
      buf.clear();
      ends.clear();
      for (std::string_view m : members) {
        for (char c : m)
          if (c != ' ' && c != '\t')
            buf.push_back(http::ascii_lower(c));
        ends.push_back(buf.size());
      }
      sorted.clear();
      for (size_t i = 0, at = 0; i < ends.size(); at = ends[i++]) // views once buf is whole
        sorted.push_back(std::string_view(buf).substr(at, ends[i] - at));
      std::sort(sorted.begin(), sorted.end());
      for (size_t i = 0; i < sorted.size(); ++i) {
        if (i)
          out.push_back(',');
        out.append(sorted[i]);
      }
    } else {
      for (size_t i = 0; i < members.size(); ++i) {
        if (i)
          out.push_back(',');
        out.append(members[i]);
      }
    }
    out.push_back('\0');
  }
}

} // namespace portico::cache
