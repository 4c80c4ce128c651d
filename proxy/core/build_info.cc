#include "core/build_info.h"

#include <ev.h>
#include <llhttp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/crypto.h>

#ifndef PORTICO_VERSION_STRING
#define PORTICO_VERSION_STRING "unknown"
#endif
#ifndef PORTICO_BUILD_TYPE
#define PORTICO_BUILD_TYPE "unknown"
#endif

namespace portico::core {

std::vector<Component> core_components() {
  return {
      {"nghttp2", nghttp2_version(0)->version_str},
      {"OpenSSL", OpenSSL_version(OPENSSL_VERSION)},
      {"libev", std::to_string(ev_version_major()) + "." + std::to_string(ev_version_minor())},
      {"llhttp", std::to_string(LLHTTP_VERSION_MAJOR) + "." + std::to_string(LLHTTP_VERSION_MINOR) +
                     "." + std::to_string(LLHTTP_VERSION_PATCH)},
  };
}

void print_build_info(std::FILE* out, const char* program, const std::vector<Component>& libs) {
  std::fprintf(out, "%s %s\n", program, PORTICO_VERSION_STRING);
  std::fprintf(out, "build type: %s\n", PORTICO_BUILD_TYPE);
#if defined(__clang__)
  std::fprintf(out, "compiler: clang %s\n", __clang_version__);
#elif defined(__GNUC__)
  std::fprintf(out, "compiler: g++ %s\n", __VERSION__);
#endif
#if defined(__SANITIZE_ADDRESS__)
  std::fprintf(out, "sanitizers: address, undefined\n");
#endif
  for (const auto& c : libs)
    std::fprintf(out, "%s: %s\n", c.name.c_str(), c.version.c_str());
}

} // namespace portico::core
