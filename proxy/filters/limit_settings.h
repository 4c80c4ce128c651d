#pragma once
// What a route's `rate_limit` and `concurrency_limit` read alike: a table or a list of them,
// the key, the exempt ranges and the table's size.
#include "config/reader.h"
#include "core/cidr.h"
#include "http/request_key.h"

#include <string>
#include <vector>

namespace portico::filters {

// value's tables: itself, or each of a list; empty after saying what is wrong (example: how
// one is written).
std::vector<const toml::table*> limit_tables(config::Reader& r, const toml::node& value,
                                             const std::string& key, const std::string& example,
                                             const std::string& where);
// t's `key` (when it has one) and `exempt`.
void read_key_and_exempt(config::Reader& r, const toml::table& t, std::vector<http::KeyPart>& key,
                         std::vector<core::Cidr>& exempt, const std::string& where);
// t's `table_size` (65536 unless it says).
size_t read_table_size(config::Reader& r, const toml::table& t, const std::string& where);

} // namespace portico::filters
