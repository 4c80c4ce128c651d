// Reads a route's `cache`: true (the defaults), false, or a table of memory / max_object /
// max_variants / disk / disk_size / key / key_fields / heuristic / heuristic_max / stale_if_error /
// lock_timeout / pass_for / targeted / name / set_cookie.
#include "filters/cache_settings.h"

#include "config/reader.h"
#include "config/route_settings.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace portico::filters {

namespace {

bool token(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'))
      return false;
  return true;
}

void read_key(config::Reader& r, const toml::table& t, CacheSettings& s, const std::string& where) {
  if (t.get("key")) {
    s.key.scheme = s.key.host = s.key.path = s.key.query = false;
    for (const auto& part : r.get_strings(t, "key", where)) {
      bool* flag = part == "scheme"  ? &s.key.scheme
                   : part == "host"  ? &s.key.host
                   : part == "path"  ? &s.key.path
                   : part == "query" ? &s.key.query
                                     : nullptr;
      if (!flag)
        r.error(t.get("key")->source(), where +
                                            ": key parts are \"scheme\", \"host\", "
                                            "\"path\" and \"query\", not '" +
                                            part + "'");
      else
        *flag = true;
    }
    if (!s.key.path)
      r.error(t.get("key")->source(), where + ": the key needs \"path\"");
  }
  if (t.get("key_fields")) {
    for (auto name : r.get_strings(t, "key_fields", where)) {
      for (auto& c : name)
        c = http::ascii_lower(c);
      if (!token(name))
        r.error(t.get("key_fields")->source(), where + ": '" + name + "' is no field name");
      s.key.fields.push_back(name);
    }
  }
}

// The directory is made if it is not there (not its parents), and must be one the proxy can
// write: found now, with the line, rather than at the first response stored.
void check_disk(config::Reader& r, const toml::node& n, std::string& dir,
                const std::string& where) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  if (dir.empty() || dir.front() != '/') {
    r.error(n.source(), where + ": 'disk' must be an absolute path");
    return;
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    r.error(n.source(), where + ": cannot make '" + dir + "': " + std::strerror(errno));
    return;
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    r.error(n.source(), where + ": '" + dir + "' is not a directory");
  else if (::access(dir.c_str(), W_OK | X_OK) != 0)
    r.error(n.source(), where + ": '" + dir + "' is not writable: " + std::strerror(errno));
}

constexpr config::EnumName<CacheSettings::SetCookie> kSetCookie[] = {
    {"pass", CacheSettings::SetCookie::PASS},
    {"store", CacheSettings::SetCookie::STORE},
};

std::shared_ptr<const void> read_cache(config::Reader& r, const toml::node& value,
                                       const std::string& where) {
  auto s = std::make_shared<CacheSettings>();
  if (value.is_boolean())
    return *value.value<bool>() ? s : nullptr;
  const toml::table* t = value.as_table();
  if (!t) {
    r.error(value.source(), where + ": 'cache' must be true, false or a table");
    return nullptr;
  }
  r.only_keys(*t,
              {"memory", "max_object", "max_variants", "disk", "disk_size", "key", "key_fields",
               "heuristic", "heuristic_max", "stale_if_error", "lock_timeout", "pass_for",
               "targeted", "name", "set_cookie"},
              where);
  r.get_number(*t, "memory", s->memory, where, 1 << 16, 1e12);
  r.get_number(*t, "max_object", s->max_object, where, 0, 1e12);
  r.get_number(*t, "max_variants", s->max_variants, where, 1, 1024);
  r.get_number(*t, "disk_size", s->disk_size, where, 1 << 20, 1e15);
  if (r.get_string(*t, "disk", s->disk, where))
    check_disk(r, *t->get("disk"), s->disk, where);
  read_key(r, *t, *s, where);
  r.get_number(*t, "heuristic", s->freshness.heuristic_fraction, where, 0, 1);
  r.get_number(*t, "heuristic_max", s->freshness.heuristic_max, where, 0, 365 * 86400.0);
  r.get_number(*t, "stale_if_error", s->freshness.stale_if_error, where, 0, 365 * 86400.0);
  r.get_number(*t, "lock_timeout", s->lock_timeout, where, 0, 600);
  r.get_number(*t, "pass_for", s->pass_for, where, 0, 86400);
  if (t->get("targeted")) {
    s->targeted = r.get_strings(*t, "targeted", where);
    for (auto& name : s->targeted) {
      for (auto& c : name)
        c = http::ascii_lower(c);
      if (!token(name) || name == "cache-control")
        r.error(t->get("targeted")->source(),
                where + ": targeted lists fields such as \"cdn-cache-control\"");
    }
  }
  if (r.get_string(*t, "name", s->name, where) && !token(s->name))
    r.error(t->get("name")->source(), where + ": name is a token (letters, digits, - and _)");
  r.get_enum(*t, "set_cookie", kSetCookie, s->set_cookie, where,
             where + ": set_cookie is \"pass\" or \"store\"");
  if (s->max_object > s->memory)
    s->max_object = s->memory;
  return s;
}

void check_cache(config::Reader& r, const toml::node& value, const void*,
                 const config::RouteConfig& route, const std::string& where) {
  if (route.websocket)
    r.error(value.source(), where + ": not with websocket");
}

} // namespace

extern const config::RouteSettingsReader settings_cache{"cache", read_cache, nullptr, check_cache};

} // namespace portico::filters
