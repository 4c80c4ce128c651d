#pragma once
// What `-V` prints for both binaries: the version, how it was built, and the version of every
// library it runs with (as linked at run time where the library can say, else as built), so a
// bug report carries what an operator cannot otherwise see.
#include <cstdio>
#include <string>
#include <vector>

namespace portico::core {

struct Component {
  std::string name;
  std::string version;
};

// The libraries of the server core: nghttp2, OpenSSL, libev, llhttp.
std::vector<Component> core_components();
// "PROGRAM VERSION", build type, compiler, then one line per component.
void print_build_info(std::FILE* out, const char* program, const std::vector<Component>& libs);

} // namespace portico::core
