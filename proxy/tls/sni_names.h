#pragma once
// Which SNI entry a client's server name selects: the first one (lowest index) that names it
// exactly or by "*." and one leftmost label ("*.example.com" takes www.example.com, neither
// a.b.example.com nor example.com), ASCII case aside. Hashed, so a handshake's lookup is two
// probes whatever the number of certificates.
#include "core/string_map.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace portico::tls {

class SniNames {
public:
  static constexpr size_t kNone = SIZE_MAX;

  // Entries are added in their order: a pattern an earlier entry has keeps that entry.
  void add(std::string_view pattern, size_t entry);
  size_t find(std::string_view name) const;

private:
  core::StringMap<size_t> exact_;    // lower-case name
  core::StringMap<size_t> wildcard_; // ".example.com" for "*.example.com"
};

} // namespace portico::tls
