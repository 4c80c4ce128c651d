#pragma once
// What the config loader's section readers share: the TOML reader that collects errors with
// their FILE:LINE:COL and goes on, so that one run reports them all.
#include "config/config.h"

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>

namespace portico::config {

// Collects errors with their position; the loader goes on after each so all are reported.
class Reader {
public:
  Reader(const std::string& path, std::vector<std::string>* errors)
      : path_(path), errors_(errors) {}

  void error(const toml::source_region& at, const std::string& msg) {
    errors_->push_back(path_ + ":" + std::to_string(at.begin.line) + ":" +
                       std::to_string(at.begin.column) + ": " + msg);
  }
  bool failed() const { return !errors_->empty(); }
  void warning(const toml::source_region& at, const std::string& msg) {
    warnings.push_back(path_ + ":" + std::to_string(at.begin.line) + ":" +
                       std::to_string(at.begin.column) + ": warning: " + msg);
  }
  std::vector<std::string> warnings;

  // Flags every key of t that is not in known: a typo must not be silently ignored.
  void only_keys(const toml::table& t, std::initializer_list<std::string_view> known,
                 const std::string& where) {
    only_keys(t, known, where, [](std::string_view, const toml::node&) { return false; });
  }
  // The same, but a key not in known is first offered to claim(key, value) (a filter's own
  // route key, config/route_settings.h), and is unknown only when claim returns false.
  template <typename Claim>
  void only_keys(const toml::table& t, std::initializer_list<std::string_view> known,
                 const std::string& where, Claim&& claim) {
    for (auto&& [k, v] : t) {
      bool ok = false;
      for (auto n : known)
        ok |= k.str() == n;
      if (!ok && !claim(k.str(), v))
        error(k.source(), "unknown key '" + std::string(k.str()) + "' in " + where);
    }
  }

  // A string naming one of names; anything else is refused with message. True when set.
  template <typename E, size_t N>
  bool get_enum(const toml::table& t, std::string_view key, const EnumName<E> (&names)[N], E& out,
                const std::string& where, const std::string& message) {
    std::string s;
    if (!get_string(t, key, s, where))
      return false;
    if (std::optional<E> v = enum_named(names, s)) {
      out = *v;
      return true;
    }
    error(t.get(key)->source(), message);
    return false;
  }

  bool get_string(const toml::table& t, std::string_view key, std::string& out,
                  const std::string& where, bool required = false) {
    const toml::node* n = t.get(key);
    if (!n) {
      if (required)
        error(t.source(), where + ": '" + std::string(key) + "' is required");
      return false;
    }
    if (auto s = n->value<std::string>()) {
      out = *s;
      return true;
    }
    error(n->source(), where + ": '" + std::string(key) + "' must be a string");
    return false;
  }

  template <typename T>
  void get_number(const toml::table& t, std::string_view key, T& out, const std::string& where,
                  double min, double max) {
    const toml::node* n = t.get(key);
    if (!n)
      return;
    std::optional<double> v;
    if (n->is_integer())
      v = static_cast<double>(*n->value<int64_t>());
    else if (n->is_floating_point())
      v = *n->value<double>();
    if (!v || !std::isfinite(*v) || *v < min || *v > max) {
      error(n->source(), where + ": '" + std::string(key) + "' must be a number from " + trim(min) +
                             " to " + trim(max));
      return;
    }
    out = static_cast<T>(*v);
  }

  void get_bool(const toml::table& t, std::string_view key, bool& out, const std::string& where) {
    const toml::node* n = t.get(key);
    if (!n)
      return;
    if (n->is_boolean()) // value<bool>() would also take 1 or 0
      out = *n->value<bool>();
    else
      error(n->source(), where + ": '" + std::string(key) + "' must be true or false");
  }

  const toml::table* get_table(const toml::table& t, std::string_view key,
                               const std::string& where) {
    const toml::node* n = t.get(key);
    if (!n)
      return nullptr;
    if (!n->is_table()) {
      error(n->source(), where + ": '" + std::string(key) + "' must be a table");
      return nullptr;
    }
    return n->as_table();
  }

  // [[name]]: an array of tables.
  std::vector<const toml::table*> get_tables(const toml::table& t, std::string_view key) {
    std::vector<const toml::table*> out;
    const toml::node* n = t.get(key);
    if (!n)
      return out;
    const toml::array* a = n->as_array();
    if (!a) {
      error(n->source(), "'" + std::string(key) + "' must be written [[" + std::string(key) + "]]");
      return out;
    }
    for (const auto& e : *a) {
      if (const auto* et = e.as_table())
        out.push_back(et);
      else
        error(e.source(), "each '" + std::string(key) + "' must be a table");
    }
    return out;
  }

  // A string or an array of strings.
  std::vector<std::string> get_strings(const toml::table& t, std::string_view key,
                                       const std::string& where) {
    std::vector<std::string> out;
    const toml::node* n = t.get(key);
    if (!n)
      return out;
    if (auto s = n->value<std::string>()) {
      out.push_back(*s);
    } else if (const auto* a = n->as_array()) {
      for (const auto& e : *a) {
        if (auto s = e.value<std::string>())
          out.push_back(*s);
        else
          error(e.source(), where + ": '" + std::string(key) + "' must hold strings");
      }
    } else {
      error(n->source(), where + ": '" + std::string(key) + "' must be a string or an array");
    }
    return out;
  }

  // Paths in the file are relative to the file's directory, like nginx's include.
  std::string resolve(const std::string& p) const {
    if (p.empty() || p[0] == '/')
      return p;
    auto slash = path_.rfind('/');
    return slash == std::string::npos ? p : path_.substr(0, slash + 1) + p;
  }

  void readable_file(const toml::node* at, const std::string& file, const std::string& what) {
    if (::access(file.c_str(), R_OK) != 0)
      error(at ? at->source() : toml::source_region{},
            what + " '" + file + "' cannot be read: " + std::strerror(errno));
  }

private:
  static std::string trim(double d) {
    std::ostringstream o;
    o << d;
    return o.str();
  }
  const std::string& path_;
  std::vector<std::string>* errors_;
};

} // namespace portico::config
