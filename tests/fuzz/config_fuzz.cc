// libFuzzer target for the configuration loader: any bytes as a TOML file. The loader must
// answer with a Config or with errors, each "FILE:LINE:COL: message", and never crash, throw or
// hang (a 20-digit port once ended `portico -t` on an uncaught std::stoi exception). A Config it
// accepts must hold what validation promises.
#include "config/config_loader.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      __builtin_trap();                                                                            \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> errors;
  auto c = portico::config::parse_config(text, "fuzz.toml", &errors);
  FUZZ_CHECK(c.has_value() == errors.empty());
  for (const auto& e : errors)
    FUZZ_CHECK(e.starts_with("fuzz.toml:") && e.find(": ", 10) != std::string::npos);
  if (c) {
    FUZZ_CHECK(!c->listeners.empty() && !c->routes.empty());
    for (const auto& r : c->routes)
      FUZZ_CHECK(r.cluster_index < c->clusters.size() && !r.path_prefix.empty() &&
                 r.path_prefix[0] == '/');
    for (const auto& cl : c->clusters)
      FUZZ_CHECK(!cl.endpoints.empty() && cl.queue_timeout >= 0 && cl.connect_timeout > 0);
    FUZZ_CHECK(c->server.keepalive_timeout > 0 && c->server.header_timeout > 0);
    FUZZ_CHECK(!c->metrics.buckets.empty());
  }
  return 0;
}
