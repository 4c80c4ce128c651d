#include "filters/limit_settings.h"

namespace portico::filters {

std::vector<const toml::table*> limit_tables(config::Reader& r, const toml::node& value,
                                             const std::string& key, const std::string& example,
                                             const std::string& where) {
  std::vector<const toml::table*> tables;
  if (const auto* t = value.as_table()) {
    tables.push_back(t);
  } else if (const auto* a = value.as_array()) {
    for (const auto& e : *a) {
      if (!e.as_table()) {
        r.error(e.source(), where + ": '" + key + "' lists tables");
        return {};
      }
      tables.push_back(e.as_table());
    }
  }
  if (tables.empty())
    r.error(value.source(), where + ": '" + key + "' is a table (or a list of them): " + example);
  return tables;
}

void read_key_and_exempt(config::Reader& r, const toml::table& t, std::vector<http::KeyPart>& key,
                         std::vector<core::Cidr>& exempt, const std::string& where) {
  if (t.get("key")) {
    key.clear();
    for (const auto& part : r.get_strings(t, "key", where)) {
      if (auto p = http::parse_key_part(part))
        key.push_back(*p);
      else
        r.error(t.get("key")->source(),
                where +
                    ": key parts are \"client\", \"route\", \"header:NAME\" and "
                    "\"cookie:NAME\", not '" +
                    part + "'");
    }
    if (key.empty())
      r.error(t.get("key")->source(), where + ": the key needs a part");
  }
  for (const auto& range : r.get_strings(t, "exempt", where)) {
    if (auto c = core::parse_cidr(range))
      exempt.push_back(*c);
    else
      r.error(t.get("exempt")->source(),
              where + ": exempt entry '" + range + "' is not an address or ADDRESS/BITS");
  }
}

size_t read_table_size(config::Reader& r, const toml::table& t, const std::string& where) {
  double slots = 65536;
  r.get_number(t, "table_size", slots, where, 64, 1 << 26);
  return static_cast<size_t>(slots);
}

} // namespace portico::filters
