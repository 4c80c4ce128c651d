#pragma once
// A limit's table found by the limit's name, so that two routes naming one limit share it and a
// reload keeps what clients have spent: the one the process has when it has as many slots,
// else a new one. When a configuration is read, never on a request.
#include <bit>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace portico::limits {

template <typename Table>
std::shared_ptr<Table> named_table(const std::string& name, size_t slots) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<Table>> tables;
  std::lock_guard lock(mu);
  auto& entry = tables[name];
  auto t = entry.lock();
  if (!t || t->slots() != Table::slots_for(slots)) {
    t = std::make_shared<Table>(slots);
    entry = t;
  }
  return t;
}

} // namespace portico::limits
