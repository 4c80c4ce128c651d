#include "compression/encoding.h"

#include "http/header.h"

namespace portico::compression {

std::string_view token(Encoding e) {
  switch (e) {
  case Encoding::GZIP: return "gzip";
  case Encoding::BROTLI: return "br";
  case Encoding::ZSTD: return "zstd";
  case Encoding::COUNT: break;
  }
  return "identity";
}

std::optional<Encoding> encoding_named(std::string_view t) {
  if (http::iequals(t, "gzip") || http::iequals(t, "x-gzip"))
    return Encoding::GZIP;
  if (http::iequals(t, "br"))
    return Encoding::BROTLI;
  if (http::iequals(t, "zstd"))
    return Encoding::ZSTD;
  return std::nullopt;
}

} // namespace portico::compression
