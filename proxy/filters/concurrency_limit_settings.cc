// Reads a route's `concurrency_limit`: a table, or an array of tables, of name / max / key /
// exempt / dry_run / status / table_size.
#include "filters/concurrency_limit_settings.h"

#include "config/reader.h"
#include "config/route_settings.h"

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
  if (t.get("key")) {
    l.key.clear();
    for (const auto& part : r.get_strings(t, "key", where)) {
      if (auto p = limits::parse_key_part(part))
        l.key.push_back(*p);
      else
        r.error(t.get("key")->source(),
                where +
                    ": key parts are \"client\", \"route\", \"header:NAME\" and "
                    "\"cookie:NAME\", not '" +
                    part + "'");
    }
    if (l.key.empty())
      r.error(t.get("key")->source(), where + ": the key needs a part");
  }
  for (const auto& range : r.get_strings(t, "exempt", where)) {
    if (auto c = core::parse_cidr(range))
      l.exempt.push_back(*c);
    else
      r.error(t.get("exempt")->source(),
              where + ": exempt entry '" + range + "' is not an address or ADDRESS/BITS");
  }
  double slots = 65536;
  r.get_number(t, "table_size", slots, where, 64, 1 << 26);
  l.table = limits::CountTable::named(l.name, static_cast<size_t>(slots));
  l.counters = &metrics::limit_counters(l.name);
}

std::shared_ptr<const void> read_concurrency_limit(config::Reader& r, const toml::node& value,
                                                   const std::string& where) {
  auto s = std::make_shared<ConcurrencyLimitSettings>();
  std::vector<const toml::table*> tables;
  if (const auto* t = value.as_table()) {
    tables.push_back(t);
  } else if (const auto* a = value.as_array()) {
    for (const auto& e : *a)
      if (e.as_table())
        tables.push_back(e.as_table());
  }
  if (tables.empty()) {
    r.error(value.source(), where + ": 'concurrency_limit' is a table (or a list of them): "
                                    "{ name = \"uploads\", max = 10 }");
    return nullptr;
  }
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
