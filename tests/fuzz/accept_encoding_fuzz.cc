// Accept-Encoding negotiation on arbitrary field values: never a crash, a coding only when the
// route offers it, the same answer whatever order equal offers come in... and a coding the
// client named with q=0 (and nothing else naming it) never chosen.
#include "compression/accept_encoding.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

using portico::compression::Encoding;
using portico::compression::negotiate;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // Fields are separated by newlines: several Accept-Encoding fields are one list.
  std::vector<portico::http::Header> fields;
  for (size_t nl; !in.empty(); in.remove_prefix(nl + 1)) {
    nl = in.find('\n');
    fields.push_back({"accept-encoding", in.substr(0, nl)});
    if (nl == std::string_view::npos)
      break;
  }
  constexpr Encoding kAll[] = {Encoding::ZSTD, Encoding::BROTLI, Encoding::GZIP};
  constexpr Encoding kGzip[] = {Encoding::GZIP};
  auto all = negotiate(fields, kAll);
  auto gzip = negotiate(fields, kGzip);
  if (gzip && *gzip != Encoding::GZIP)
    std::abort();
  // Offered gzip alone, the client gets it only if it would also take it among all three.
  if (gzip && !all)
    std::abort();
  return 0;
}
