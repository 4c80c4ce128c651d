#include "cache/cache_control.h"

#include "http/header.h"

namespace portico::cache {

namespace {

// One directive: name, its value (quotes removed, escapes left: no directive Portico reads
// has one), and whether it had a value at all.
struct Directive {
  std::string_view name, value;
  bool has_value = false;
  bool valid = true;
};

// The next directive of a field value from pos, which moves past it and its comma. Commas
// inside a quoted string do not end it.
Directive next_directive(std::string_view v, size_t& pos) {
  size_t start = pos;
  bool quoted = false;
  for (; pos < v.size(); ++pos) {
    char c = v[pos];
    if (quoted && c == '\\') {
      ++pos;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      break;
    }
  }
  std::string_view item = http::trim_ows(v.substr(start, pos - start));
  if (pos < v.size())
    ++pos;
  Directive d;
  size_t eq = item.find('=');
  d.name = item.substr(0, eq);
  if (eq != std::string_view::npos) {
    d.has_value = true;
    d.value = item.substr(eq + 1);
    if (d.value.size() >= 2 && d.value.front() == '"' && d.value.back() == '"')
      d.value = d.value.substr(1, d.value.size() - 2);
    else if (!d.value.empty() && !http::is_token(d.value)) // "max-age=": invalid, not ignored
      d.valid = false;
  }
  d.valid = d.valid && http::is_token(d.name); // "max-age =1": a space is no part of a name
  return d;
}

// A delta-seconds directive's value, once: later occurrences of the directive are ignored.
void set_delta(int64_t& out, const Directive& d) {
  if (out != CacheControl::kAbsent)
    return;
  int64_t v = d.has_value ? parse_delta_seconds(d.value) : -1;
  out = v < 0 ? CacheControl::kInvalid : v;
}

void apply(CacheControl& cc, const Directive& d) {
  std::string_view n = d.name;
  auto is = [&](std::string_view want) { return http::iequals(n, want); };
  if (is("max-age")) {
    set_delta(cc.max_age, d);
  } else if (is("s-maxage")) {
    set_delta(cc.s_maxage, d);
  } else if (is("stale-while-revalidate")) {
    set_delta(cc.stale_while_revalidate, d);
  } else if (is("stale-if-error")) {
    set_delta(cc.stale_if_error, d);
  } else if (is("min-fresh")) {
    set_delta(cc.min_fresh, d);
  } else if (is("max-stale")) {
    if (!d.has_value) {
      if (cc.max_stale == CacheControl::kAbsent)
        cc.max_stale = CacheControl::kAny;
    } else {
      set_delta(cc.max_stale, d);
    }
  } else if (is("no-store")) {
    cc.no_store = true;
  } else if (is("no-cache")) {
    if (d.has_value && !d.value.empty())
      cc.no_cache_fields = d.value;
    else
      cc.no_cache = true;
  } else if (is("private")) {
    if (d.has_value && !d.value.empty())
      cc.private_fields = d.value;
    else
      cc.private_ = true;
  } else if (is("public")) {
    cc.public_ = true;
  } else if (is("must-revalidate")) {
    cc.must_revalidate = true;
  } else if (is("proxy-revalidate")) {
    cc.proxy_revalidate = true;
  } else if (is("must-understand")) {
    cc.must_understand = true;
  } else if (is("only-if-cached")) {
    cc.only_if_cached = true;
  } else if (is("immutable")) {
    cc.immutable = true;
  }
}

} // namespace

int64_t parse_delta_seconds(std::string_view v) {
  if (v.empty())
    return -1;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9')
      return -1;
    if (n < CacheControl::kMaxDelta)
      n = n * 10 + (c - '0');
  }
  return n < CacheControl::kMaxDelta ? n : CacheControl::kMaxDelta;
}

CacheControl parse_cache_control(std::span<const http::Header> fields, std::string_view name) {
  CacheControl cc;
  for (const auto& f : fields) {
    if (f.name != name)
      continue;
    cc.present = true;
    for (size_t pos = 0; pos < f.value.size();) {
      Directive d = next_directive(f.value, pos);
      if (d.valid) // one spelt wrong ("max-age =1", "max-age= 1") is ignored
        apply(cc, d);
    }
  }
  return cc;
}

} // namespace portico::cache
