// Reads a route's `rate_limit`: a table, or an array of tables, of name / rate / burst / delay /
// nodelay / key / exempt / dry_run / status / headers / table_size / shared.
#include "filters/rate_limit_settings.h"

#include "config/reader.h"
#include "config/route_settings.h"
#include "core/endpoint_address.h"
#include "filters/limit_settings.h"

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
  // At least one an hour: burst × interval stays within 64 bits of nanoseconds.
  if (!std::isfinite(per) || per * (window == 60 ? 60 : 3600) < 1 || per > 1e7) {
    r.error(n.source(), where + ": rate is requests per second, or \"10r/s\" or \"600r/m\", "
                                "at least one an hour and at most 10000000 a second");
    return false;
  }
  l.interval_ns = static_cast<int64_t>(std::llround(1e9 * static_cast<double>(window) / per));
  l.per_window = std::max<int64_t>(1, std::llround(per));
  l.window_s = window;
  return true;
}

// `shared = { redis = "127.0.0.1:6379", timeout = 0.05, failure = "open", batch = 4,
// prefix = "...", password = "..." }`: the limit's budget is kept in Redis for every instance.
void read_shared(config::Reader& r, const toml::node& n, RateLimit& l, size_t slots,
                 const std::string& where) {
  const toml::table* t = n.as_table();
  std::string w = where + ": shared";
  if (!t) {
    r.error(n.source(), w + " is a table: { redis = \"127.0.0.1:6379\" }");
    return;
  }
  r.only_keys(*t, {"redis", "timeout", "failure", "batch", "prefix", "password"}, w);
  auto s = std::make_shared<limits::SharedSettings>();
  s->slots = slots;
  std::string address;
  if (!r.get_string(*t, "redis", address, w, true))
    return;
  auto e = core::parse_endpoint(address);
  if (!e || (!e->is_unix && !e->numeric)) {
    r.error(t->get("redis")->source(),
            w + ".redis: '" + address + "' " +
                (e ? std::string("is a name: give Redis' IP address (a name would be resolved "
                                 "by a blocking call)")
                   : e.error()));
    return;
  }
  s->redis.text = e->text;
  s->redis.host = e->host;
  s->redis.port = e->port;
  s->redis.unix_path = e->path;
  r.get_string(*t, "password", s->redis.password, w, false);
  r.get_number(*t, "timeout", s->timeout_s, w, 0.001, 10);
  std::string failure = "open";
  r.get_string(*t, "failure", failure, w, false);
  if (failure != "open" && failure != "closed")
    r.error(t->get("failure")->source(), w + ".failure is \"open\" (let requests through while "
                                             "Redis is down) or \"closed\" (refuse them)");
  s->fail_open = failure == "open";
  r.get_number(*t, "batch", s->batch, w, 1, 100000);
  s->prefix = "portico:rl:" + l.name + ":";
  r.get_string(*t, "prefix", s->prefix, w, false);
  l.nodelay = true;
  l.shared = std::move(s);
}

void read_one(config::Reader& r, const toml::table& t, RateLimit& l, const std::string& where) {
  r.only_keys(t,
              {"name", "rate", "burst", "delay", "nodelay", "key", "exempt", "dry_run", "status",
               "headers", "table_size", "shared"},
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
  read_key_and_exempt(r, t, l.key, l.exempt, where);
  if (const toml::node* shared = t.get("shared")) {
    if (t.get("delay") || t.get("nodelay"))
      r.error(shared->source(), where + ": a shared limit lets its burst through at once "
                                        "(nodelay): it takes no delay or nodelay");
    read_shared(r, *shared, l, read_table_size(r, t, where), where);
  } else {
    l.table = limits::GcraTable::named(l.name, read_table_size(r, t, where));
  }
  l.counters = &metrics::limit_counters(l.name);
}

std::shared_ptr<const void> read_rate_limit(config::Reader& r, const toml::node& value,
                                            const std::string& where) {
  auto s = std::make_shared<RateLimitSettings>();
  auto tables = limit_tables(r, value, "rate_limit", "{ name = \"api\", rate = \"10r/s\" }", where);
  if (tables.empty())
    return nullptr;
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
