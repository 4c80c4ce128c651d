#pragma once
// A route's `compress` key (filters/compress_settings.cc reads it): which codings, in the
// route's order of preference, at which levels, for which content types and lengths.
#include "compression/encoding.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace portico::filters {

struct CompressSettings {
  std::vector<compression::Encoding> encodings{
      compression::Encoding::ZSTD, compression::Encoding::BROTLI, compression::Encoding::GZIP};
  int gzip_level = 6;       // zlib's default
  int brotli_quality = 4;   // brotli's own default (11) costs ~10x gzip -6 per byte
  int zstd_level = 3;       // zstd's default
  int64_t min_length = 256; // a known length below this is sent as it is
  // Media types compressed: exact, or with one `*` ("text/*", "application/*+json").
  std::vector<std::string> types;

  int level(compression::Encoding e) const {
    return e == compression::Encoding::GZIP     ? gzip_level
           : e == compression::Encoding::BROTLI ? brotli_quality
                                                : zstd_level;
  }
  // Whether a Content-Type value (parameters and case aside) is one of types.
  bool compressible(std::string_view content_type) const;
};

// The types compressed when a route names none: text, and the structured formats that are
// text (JSON, XML, JavaScript, SVG, WebAssembly, fonts other than the compressed WOFFs).
extern const char* const kDefaultCompressTypes[];
extern const size_t kDefaultCompressTypeCount;

} // namespace portico::filters
