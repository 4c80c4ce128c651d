// Reads a route's `rate_limit`: a table, or an array of tables, of name / rate / burst / delay /
// nodelay / key / exempt / dry_run / status / headers / table_size.
#include "filters/rate_limit_settings.h"

#include "config/reader.h"
#include "config/route_settings.h"

#include <charconv>
#include <cmath>

namespace portico::filters {

namespace {

// "10r/s", "600r/m", or a number of requests per second.
bool read_rate(config::Reader& r, const toml::node& n, RateLimit& l, const std::string& where) {
  double per = 0;
  int64_t window = 1;
  if (auto v = n.value<double>(); v && !n.is_string()) {
    per = *v;
  } else if (auto s = n.value<std::string>()) {
    std::string_view text = *s;
    int64_t count = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
    std::string_view unit(end, text.data() + text.size() - end);
    if (ec == std::errc() && (unit == "r/s" || unit == "r/m")) {
      per = static_cast<double>(count);
      window = unit == "r/m" ? 60 : 1;
    }
  }
  if (!std::isfinite(per) || per <= 0 || per > 1e7) {
    r.error(n.source(), where + ": rate is requests per second, or \"10r/s\" or \"600r/m\", "
                                "more than 0 and at most 10000000 a second");
    return false;
  }
  l.interval_ns = static_cast<int64_t>(std::llround(1e9 * static_cast<double>(window) / per));
  l.per_window = std::max<int64_t>(1, std::llround(per));
  l.window_s = window;
  return true;
}

void read_one(config::Reader& r, const toml::table& t, RateLimit& l, const std::string& where) {
  r.only_keys(t,
              {"name", "rate", "burst", "delay", "nodelay", "key", "exempt", "dry_run", "status",
               "headers", "table_size"},
              where);
  if (!r.get_string(t, "name", l.name, where, true))
    return;
  const toml::node* rate = t.get("rate");
  if (!rate) {
    r.error(t.source(), where + ": a rate limit needs a rate");
    return;
  }
  read_rate(r, *rate, l, where);
  r.get_number(t, "burst", l.burst, where, 0, 1e6);
  r.get_number(t, "delay", l.delay, where, 0, 1e6);
  r.get_bool(t, "nodelay", l.nodelay, where);
  r.get_bool(t, "dry_run", l.dry_run, where);
  r.get_bool(t, "headers", l.headers, where);
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
  l.table = limits::GcraTable::named(l.name, static_cast<size_t>(slots));
  l.counters = &metrics::limit_counters(l.name);
}

std::shared_ptr<const void> read_rate_limit(config::Reader& r, const toml::node& value,
                                            const std::string& where) {
  auto s = std::make_shared<RateLimitSettings>();
  std::vector<const toml::table*> tables;
  if (const auto* t = value.as_table()) {
    tables.push_back(t);
  } else if (const auto* a = value.as_array()) {
    for (const auto& e : *a) {
      if (!e.as_table()) {
        r.error(e.source(), where + ": 'rate_limit' lists tables");
        return nullptr;
      }
      tables.push_back(e.as_table());
    }
  }
  if (tables.empty()) {
    r.error(value.source(), where + ": 'rate_limit' is a table (or a list of them): "
                                    "{ name = \"api\", rate = \"10r/s\" }");
    return nullptr;
  }
  for (const auto* t : tables) {
    RateLimit l;
    read_one(r, *t, l, where);
    for (const auto& other : s->limits)
      if (other.name == l.name)
        r.error(t->source(), where + ": two rate limits called '" + l.name + "'");
    s->limits.push_back(std::move(l));
  }
  return s;
}

} // namespace

extern const config::RouteSettingsReader settings_rate_limit{"rate_limit", read_rate_limit};

} // namespace portico::filters
