// What a response and a request bring a cache from the network: Cache-Control (and targeted
// fields), Age, Date, Expires, Last-Modified and Vary values, one "name: value" per line. Never
// a crash; delta-seconds stay within 0..2^31 or their marks; a freshness lifetime and an age are
// never negative; a date that parses formats and parses back to itself; the Vary names are at
// most kMaxVaryNames, each once, and a request's selecting string is the same when made twice.
#include "cache/cache_control.h"
#include "cache/freshness.h"
#include "cache/vary.h"
#include "core/http_date.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

using namespace portico;

namespace {

bool delta_ok(int64_t v) {
  return v == cache::CacheControl::kAbsent || v == cache::CacheControl::kInvalid ||
         v == cache::CacheControl::kAny || (v >= 0 && v <= cache::CacheControl::kMaxDelta);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> names;
  std::vector<http::Header> fields;
  names.reserve(64);
  while (!in.empty() && fields.size() < 64) {
    size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      continue;
    std::string name(line.substr(0, colon));
    for (auto& c : name)
      c = http::ascii_lower(c);
    names.push_back(name);
    fields.push_back({names.back(), http::trim_ows(line.substr(colon + 1))});
  }
  for (std::string_view field : {"cache-control", "cdn-cache-control"}) {
    auto cc = cache::parse_cache_control(fields, field);
    for (int64_t v : {cc.max_age, cc.s_maxage, cc.stale_while_revalidate, cc.stale_if_error,
                      cc.max_stale, cc.min_fresh})
      if (!delta_ok(v))
        std::abort();
    cache::FreshnessPolicy policy;
    std::string_view date;
    for (const auto& f : fields)
      if (f.name == "date")
        date = f.value;
    auto fr = cache::freshness_of(200, cc, fields, date, 1000000000, 1000000005, policy);
    if (fr.lifetime < 0 || fr.initial_age < 0 || fr.age(1000000100) < fr.initial_age)
      std::abort();
    cache::reuse_of(fr, cc, 1000000100);
  }
  for (const auto& f : fields) {
    if (auto t = core::parse_http_date(f.value)) {
      char out[core::kHttpDateLen];
      core::format_http_date(*t, out);
      if (*t >= 0 && *t < 253402300800 && core::parse_http_date({out, sizeof out}) != *t)
        std::abort();
    }
  }
  std::vector<std::string> vary;
  if (cache::vary_names(fields, vary)) {
    if (vary.size() > cache::kMaxVaryNames)
      std::abort();
    for (size_t i = 1; i < vary.size(); ++i)
      if (vary[i - 1] >= vary[i]) // sorted, each once
        std::abort();
    std::string a, b;
    cache::vary_key(vary, fields, a);
    cache::vary_key(vary, fields, b);
    if (a != b)
      std::abort();
  }
  return 0;
}
