// Reads a route's `forward_auth`: a table of name / path / headers / copy / timeout /
// error_status.
#include "filters/forward_auth_settings.h"

#include "config/reader.h"
#include "config/route_settings.h"
#include "http/header.h"

namespace portico::filters {

namespace {

bool field_name(std::string& s) {
  for (auto& c : s) {
    c = http::ascii_lower(c);
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'))
      return false;
  }
  return !s.empty();
}

std::shared_ptr<const void> read_forward_auth(config::Reader& r, const toml::node& value,
                                              const std::string& where) {
  const toml::table* t = value.as_table();
  if (!t) {
    r.error(value.source(), where + ": 'forward_auth' is a table: { name = \"sso\", path = "
                                    "\"/_auth\" }");
    return nullptr;
  }
  auto s = std::make_shared<ForwardAuthSettings>();
  r.only_keys(*t,
              {"name", "path", "headers", "copy", "timeout", "error_status", "cache", "cache_size"},
              where);
  r.get_string(*t, "name", s->name, where, true);
  if (r.get_string(*t, "path", s->path, where, true) && !s->path.starts_with('/'))
    r.error(t->get("path")->source(), where + ": the auth path begins with '/'");
  for (auto* list : {&s->headers, &s->copy}) {
    const char* key = list == &s->headers ? "headers" : "copy";
    if (!t->get(key))
      continue;
    *list = r.get_strings(*t, key, where);
    for (auto& name : *list)
      if (!field_name(name))
        r.error(t->get(key)->source(), where + ": '" + name + "' is no field name");
  }
  r.get_number(*t, "timeout", s->timeout, where, 0.001, 3600);
  r.get_number(*t, "error_status", s->error_status, where, 500, 599);
  r.get_number(*t, "cache", s->cache, where, 0, 3600);
  r.get_number(*t, "cache_size", s->cache_size, where, 1, 10'000'000);
  s->counters = &metrics::auth_counters(s->name);
  return s;
}

} // namespace

extern const config::RouteSettingsReader settings_forward_auth{"forward_auth", read_forward_auth};

} // namespace portico::filters
