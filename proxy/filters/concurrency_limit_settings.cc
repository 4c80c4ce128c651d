// Reads a route's `concurrency_limit`: a table, or an array of tables, of name / max / key /
// exempt / dry_run / status / table_size.
#include "filters/concurrency_limit_settings.h"

#include "config/reader.h"
#include "config/route_settings.h"
#include "filters/limit_settings.h"

namespace portico::filters {

namespace {

void read_one(config::Reader& r, const toml::table& t, ConcurrencyLimit& l,
              const std::string& where) {
  r.only_keys(t, {"name", "max", "key", "exempt", "dry_run", "status", "table_size"}, where);
  if (!r.get_string(t, "name", l.name, where, true))
    return;
  if (!t.get("max"))
    r.error(t.source(), where + ": a concurrency limit needs a max");
  r.get_number(t, "max", l.max, where, 1, 1e6);
  r.get_bool(t, "dry_run", l.dry_run, where);
  r.get_number(t, "status", l.status, where, 400, 599);
  read_key_and_exempt(r, t, l.key, l.exempt, where);
  l.table = limits::CountTable::named(l.name, read_table_size(r, t, where));
  l.counters = &metrics::limit_counters(l.name);
}

std::shared_ptr<const void> read_concurrency_limit(config::Reader& r, const toml::node& value,
                                                   const std::string& where) {
  auto s = std::make_shared<ConcurrencyLimitSettings>();
  auto tables =
      limit_tables(r, value, "concurrency_limit", "{ name = \"uploads\", max = 10 }", where);
  if (tables.empty())
    return nullptr;
  if (tables.size() > ConcurrencyLimitSettings::kMaxLimits)
    r.error(value.source(), where + ": at most 8 concurrency limits on a route");
  for (const auto* t : tables) {
    ConcurrencyLimit l;
    read_one(r, *t, l, where);
    s->limits.push_back(std::move(l));
  }
  return s;
}

} // namespace

extern const config::RouteSettingsReader settings_concurrency_limit{"concurrency_limit",
                                                                    read_concurrency_limit};

} // namespace portico::filters
