// Reads a route's `static`: { root | alias, index, try_files, dotfiles, symlinks, precompressed,
// cache_control, expires, and the open-file cache's sizes }.
#include "filters/static_settings.h"

#include "config/config.h"
#include "config/reader.h"
#include "config/route_settings.h"

#include <cctype>
#include <climits>
#include <memory>
#include <sys/stat.h>

namespace portico::filters {

namespace {

using Symlinks = server::StaticOptions::Symlinks;
constexpr config::EnumName<Symlinks> kSymlinks[] = {
    {"within_root", Symlinks::WITHIN_ROOT},
    {"never", Symlinks::NEVER},
    {"anywhere", Symlinks::ANYWHERE},
};

void read_try_files(config::Reader& r, const toml::table& t, server::StaticOptions& o,
                    const std::string& where) {
  if (!t.get("try_files"))
    return;
  const auto& at = t.get("try_files")->source();
  o.try_files = r.get_strings(t, "try_files", where);
  if (o.try_files.empty())
    r.error(at, where + ": 'try_files' lists at least one candidate");
  for (size_t i = 0; i < o.try_files.size(); ++i) {
    const std::string& c = o.try_files[i];
    bool last = i + 1 == o.try_files.size();
    if (c.starts_with('=')) {
      int code = 0;
      bool number = c.size() == 4 && std::isdigit(c[1]) && std::isdigit(c[2]) && std::isdigit(c[3]);
      if (number)
        code = std::stoi(c.substr(1));
      if (!last || code < 400 || code > 599)
        r.error(at, where + ": '" + c + "': =CODE (400-599) comes last, as the fallback");
    } else if (c == "@upstream") {
      if (!last)
        r.error(at, where + ": '@upstream' comes last, as the fallback");
    } else if (!c.starts_with('/') && !c.starts_with("$uri")) {
      r.error(at, where + ": '" + c +
                      "' is a path (\"/index.html\"), \"$uri\", \"$uri/\", "
                      "\"=CODE\" or \"@upstream\"");
    } else if (c.size() > server::StaticFiles::kMaxCachedKey) {
      r.error(at, where + ": '" + c.substr(0, 40) + "...' is too long");
    }
  }
}

std::shared_ptr<const void> read_static(config::Reader& r, const toml::node& value,
                                        const std::string& where) {
  const toml::table* t = value.as_table();
  if (!t) {
    r.error(value.source(), where + ": 'static' must be a table ({ root = \"/srv/www\" })");
    return nullptr;
  }
  r.only_keys(*t,
              {"root", "alias", "index", "try_files", "dotfiles", "symlinks", "precompressed",
               "cache_control", "expires", "cache_bytes", "cache_entries", "cache_max_file",
               "open_files", "revalidate"},
              where);
  auto s = std::make_shared<StaticSettings>();
  auto& o = s->options;
  bool root = r.get_string(*t, "root", o.root, where);
  bool alias = r.get_string(*t, "alias", o.root, where);
  s->alias = alias;
  if (root == alias) {
    r.error(t->source(), where + ": one of 'root' and 'alias'");
    return nullptr;
  }
  const toml::node* dir = t->get(alias ? "alias" : "root");
  o.root = r.resolve(o.root);
  struct stat st;
  if (o.root.empty() || ::stat(o.root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      o.root.size() > PATH_MAX / 2)
    r.error(dir->source(), where + ": '" + o.root + "' is not a directory");
  if (t->get("index")) {
    o.index = r.get_strings(*t, "index", where);
    for (const auto& name : o.index)
      if (name.empty() || name.find('/') != std::string::npos || name.size() > 255)
        r.error(t->get("index")->source(), where + ": index names a file: '" + name + "'");
  }
  read_try_files(r, *t, o, where);
  r.get_bool(*t, "dotfiles", o.dotfiles, where);
  r.get_enum(*t, "symlinks", kSymlinks, o.symlinks, where,
             where + ": symlinks is \"within_root\", \"never\" or \"anywhere\"");
  if (const toml::node* p = t->get("precompressed")) {
    if (p->is_boolean()) {
      if (*p->value<bool>())
        o.precompressed = {compression::Encoding::ZSTD, compression::Encoding::BROTLI,
                           compression::Encoding::GZIP};
    } else {
      for (const auto& name : r.get_strings(*t, "precompressed", where)) {
        auto e = compression::encoding_named(name);
        if (!e || name == "x-gzip")
          r.error(p->source(),
                  where + ": unknown encoding '" + name + "' (zstd, br and gzip are known)");
        else
          o.precompressed.push_back(*e);
      }
    }
  }
  if (r.get_string(*t, "cache_control", o.cache_control, where) &&
      o.cache_control.find_first_of("\r\n") != std::string::npos)
    r.error(t->get("cache_control")->source(), where + ": cache_control is one line");
  r.get_number(*t, "expires", o.expires, where, 0, 10 * 365 * 86400.0);
  r.get_number(*t, "cache_bytes", o.cache_bytes, where, 0, 1e12);
  r.get_number(*t, "cache_entries", o.cache_entries, where, 0, 1e7);
  r.get_number(*t, "cache_max_file", o.max_cached_file, where, 0, 1 << 30);
  r.get_number(*t, "open_files", o.max_open_files, where, 0, 1e6);
  r.get_number(*t, "revalidate", o.revalidate_after, where, 0, 86400);
  return s;
}

bool static_answers(const void* settings) {
  const auto& o = static_cast<const StaticSettings*>(settings)->options;
  return o.try_files.empty() || o.try_files.back() != "@upstream";
}

void check_static(config::Reader& r, const toml::node& value, const void* settings,
                  const config::RouteConfig& route, const std::string& where) {
  const auto& s = *static_cast<const StaticSettings*>(settings);
  if (s.alias && route.path_prefix.empty())
    r.error(value.source(), where + ": alias needs the route's path_prefix (root serves the "
                                    "whole path)");
  if (route.has_prefix_rewrite)
    r.error(value.source(), where + ": not with prefix_rewrite (alias maps a prefix to a "
                                    "directory)");
  if (route.has_redirect || route.has_direct_response)
    r.error(value.source(), where + ": not with redirect or direct_response");
  if (route.websocket)
    r.error(value.source(), where + ": not with websocket");
  if (static_answers(settings) && !route.cluster.empty())
    r.error(value.source(), where + ": the route answers from files: its cluster would never "
                                    "be asked (end try_files with \"@upstream\" for that)");
}

} // namespace

extern const config::RouteSettingsReader settings_static_files{"static", read_static,
                                                               static_answers, check_static};

} // namespace portico::filters
