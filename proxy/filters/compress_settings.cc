// Reads a route's `compress`: true (the defaults), false, or a table of
// encodings / gzip_level / brotli_quality / zstd_level / min_length / types.
#include "filters/compress_settings.h"

#include "config/reader.h"
#include "config/route_settings.h"
#include "http/header.h"

#include <algorithm>
#include <memory>

namespace portico::filters {

const char* const kDefaultCompressTypes[] = {
    "text/*",
    "application/json",
    "application/*+json",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/xml",
    "application/*+xml",
    "application/wasm",
    "application/x-ndjson",
    "application/graphql-response+json",
    "image/svg+xml",
    "image/x-icon",
    "image/vnd.microsoft.icon",
    "image/bmp",
    "font/ttf",
    "font/otf",
    "application/vnd.ms-fontobject",
};
const size_t kDefaultCompressTypeCount = std::size(kDefaultCompressTypes);

namespace {

bool matches(std::string_view pattern, std::string_view type) {
  size_t star = pattern.find('*');
  if (star == std::string_view::npos)
    return http::iequals(pattern, type);
  std::string_view head = pattern.substr(0, star), tail = pattern.substr(star + 1);
  return type.size() >= head.size() + tail.size() &&
         http::iequals(type.substr(0, head.size()), head) &&
         http::iequals(type.substr(type.size() - tail.size()), tail);
}

std::shared_ptr<const void> read_compress(config::Reader& r, const toml::node& value,
                                          const std::string& where) {
  auto s = std::make_shared<CompressSettings>();
  s->types.assign(kDefaultCompressTypes, kDefaultCompressTypes + kDefaultCompressTypeCount);
  if (value.is_boolean())
    return *value.value<bool>() ? s : nullptr;
  const toml::table* t = value.as_table();
  if (!t) {
    r.error(value.source(), where + ": 'compress' must be true, false or a table");
    return nullptr;
  }
  r.only_keys(*t,
              {"encodings", "gzip_level", "brotli_quality", "zstd_level", "min_length", "types"},
              where);
  if (t->get("encodings")) {
    s->encodings.clear();
    for (const auto& name : r.get_strings(*t, "encodings", where)) {
      auto e = compression::encoding_named(name);
      if (!e || name == "x-gzip") {
        r.error(t->get("encodings")->source(),
                where + ": unknown encoding '" + name + "' (zstd, br and gzip are known)");
        continue;
      }
      s->encodings.push_back(*e);
    }
  }
  r.get_number(*t, "gzip_level", s->gzip_level, where, 1, 9);
  r.get_number(*t, "brotli_quality", s->brotli_quality, where, 0, 11);
  r.get_number(*t, "zstd_level", s->zstd_level, where, 1, 19);
  r.get_number(*t, "min_length", s->min_length, where, 0, 1e15);
  if (t->get("types")) {
    s->types = r.get_strings(*t, "types", where);
    for (const auto& type : s->types)
      if (std::count(type.begin(), type.end(), '*') > 1 || type.find('/') == std::string::npos)
        r.error(t->get("types")->source(),
                where + ": '" + type + "' is not a media type (type/subtype, one '*' at most)");
  }
  return s;
}

} // namespace

bool CompressSettings::compressible(std::string_view content_type) const {
  std::string_view type = http::trim_ows(content_type.substr(0, content_type.find(';')));
  for (const auto& p : types)
    if (matches(p, type))
      return true;
  return false;
}

extern const config::RouteSettingsReader settings_compress{"compress", read_compress};

} // namespace portico::filters
