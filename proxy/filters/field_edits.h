#pragma once
// A route's field edits, the same for a request head and a response head: the fields it
// removes (lower-case names), then the ones it adds.
#include "http/header.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace portico::filters {

inline void edit_fields(std::vector<http::Header>& fields, const std::vector<std::string>& remove,
                        const std::vector<std::pair<std::string, std::string>>& add) {
  if (!remove.empty())
    std::erase_if(fields, [&](const http::Header& h) {
      return std::find(remove.begin(), remove.end(), h.name) != remove.end();
    });
  for (const auto& [name, value] : add)
    fields.push_back({name, value});
}

} // namespace portico::filters
