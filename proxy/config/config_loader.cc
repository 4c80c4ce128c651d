#include "config/config_loader.h"

#include "core/endpoint_address.h"
#include "core/histogram_bounds.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <re2/re2.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>

namespace portico::config {

namespace {

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
    for (auto&& [k, v] : t) {
      bool ok = false;
      for (auto n : known)
        ok |= k.str() == n;
      if (!ok)
        error(k.source(), "unknown key '" + std::string(k.str()) + "' in " + where);
    }
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
      error(at ? at->source() : toml::source_region{}, what + " '" + file + "' cannot be read");
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

void read_server(Reader& r, const toml::table& t, ServerConfig& s) {
  const std::string w = "[server]";
  r.only_keys(t,
              {"workers", "grace_period", "keepalive_timeout", "header_timeout", "max_header_bytes",
               "max_body_bytes", "via", "forwarded", "trusted_proxies", "request_id_header",
               "h2_max_concurrent_streams", "send_timeout", "max_connections", "max_buffer_memory",
               "max_buffered_response_bytes", "pid_file", "resolvers"},
              w);
  r.get_number(t, "workers", s.workers, w, 0, 256);
  r.get_number(t, "grace_period", s.grace_period, w, 0, 86400);
  r.get_number(t, "keepalive_timeout", s.keepalive_timeout, w, 0.001, 86400);
  r.get_number(t, "header_timeout", s.header_timeout, w, 0.001, 86400);
  r.get_number(t, "send_timeout", s.send_timeout, w, 0.001, 86400);
  r.get_number(t, "max_connections", s.max_connections, w, 0, 10000000);
  r.get_number(t, "max_buffer_memory", s.max_buffer_memory, w, 0, 1e15);
  r.get_number(t, "max_buffered_response_bytes", s.max_buffered_response_bytes, w, 1 << 20, 1e12);
  r.get_number(t, "max_header_bytes", s.max_header_bytes, w, 1024, 1 << 20);
  r.get_number(t, "max_body_bytes", s.max_body_bytes, w, -1, 1e15);
  r.get_bool(t, "via", s.add_via, w);
  r.get_bool(t, "forwarded", s.add_forwarded, w);
  std::vector<std::string> trusted = r.get_strings(t, "trusted_proxies", w);
  for (size_t i = 0; i < trusted.size(); ++i) {
    if (auto c = core::parse_cidr(trusted[i])) {
      s.trusted_proxies.push_back(*c);
      continue;
    }
    // Point at the entry itself when the value is an array.
    const toml::node* n = t.get("trusted_proxies");
    if (const toml::array* a = n->as_array(); a && i < a->size())
      n = a->get(i);
    r.error(n->source(),
            w + ": trusted_proxies entry '" + trusted[i] + "' is not an address or ADDRESS/BITS");
  }
  r.get_string(t, "pid_file", s.pid_file, w);
  s.resolvers = r.get_strings(t, "resolvers", w);
  for (size_t i = 0; i < s.resolvers.size(); ++i) {
    // What c-ares takes: "IP", "IP:PORT", "[v6]" or "[v6]:PORT".
    const std::string& one = s.resolvers[i];
    bool bare = one.find(':') == std::string::npos || (one[0] == '[' && one.back() == ']');
    auto spec = core::parse_endpoint(bare ? one + ":53" : one);
    if (!spec || !spec->numeric) {
      const toml::node* n = t.get("resolvers");
      if (const toml::array* a = n->as_array(); a && i < a->size())
        n = a->get(i);
      r.error(n->source(),
              w + ": resolver '" + one + "' is not IP, IP:PORT, [IPv6] or [IPv6]:PORT");
    }
  }
  if (r.get_string(t, "request_id_header", s.request_id_header, w)) {
    // Sent as an HTTP/2 field name too, where upper case is a protocol error.
    bool ok = true;
    for (char ch : s.request_id_header)
      ok &= (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
    if (!ok)
      r.error(t.get("request_id_header")->source(),
              w + ": request_id_header must be a lower-case field name (a-z, 0-9, -, _), or \"\"");
  }
  r.get_number(t, "h2_max_concurrent_streams", s.h2_max_concurrent_streams, w, 1, 65536);
}

// A private key file that any user may read (or write) is a leak waiting to happen.
void check_key_mode(Reader& r, const toml::node* at, const std::string& file) {
  struct stat st;
  if (at && ::stat(file.c_str(), &st) == 0 && (st.st_mode & (S_IROTH | S_IWOTH)))
    r.warning(at->source(), "private key '" + file + "' is readable by every user; chmod 600 it");
}

// OpenSSL judges a cipher string; a context made only for that.
bool ciphers_valid(const std::string& list, bool tls13) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx)
    return true; // cannot tell; the listener's own context will say
  bool ok = tls13 ? SSL_CTX_set_ciphersuites(ctx, list.c_str()) == 1
                  : SSL_CTX_set_cipher_list(ctx, list.c_str()) == 1;
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return ok;
}

void read_tls(Reader& r, const toml::table& t, TlsConfig& tls, const std::string& w) {
  r.only_keys(t,
              {"certificate", "private_key", "sni", "min_version", "ciphers", "ciphersuites",
               "ocsp_staple", "ticket_key_rotation"},
              w);
  std::string min;
  if (r.get_string(t, "min_version", min, w)) {
    if (min == "1.2")
      tls.min_version = TLS1_2_VERSION;
    else if (min == "1.3")
      tls.min_version = TLS1_3_VERSION;
    else
      r.error(t.get("min_version")->source(), w + ": min_version is \"1.2\" or \"1.3\"");
  }
  if (r.get_string(t, "ciphers", tls.ciphers, w) && !ciphers_valid(tls.ciphers, false))
    r.error(t.get("ciphers")->source(),
            w + ": OpenSSL knows no TLS 1.2 cipher in '" + tls.ciphers + "'");
  if (r.get_string(t, "ciphersuites", tls.ciphersuites, w) &&
      !ciphers_valid(tls.ciphersuites, true))
    r.error(t.get("ciphersuites")->source(),
            w + ": '" + tls.ciphersuites + "' is not a list of TLS 1.3 ciphersuites");
  if (r.get_string(t, "ocsp_staple", tls.ocsp_staple, w)) {
    tls.ocsp_staple = r.resolve(tls.ocsp_staple);
    r.readable_file(t.get("ocsp_staple"), tls.ocsp_staple, "OCSP response");
  }
  r.get_number(t, "ticket_key_rotation", tls.ticket_key_rotation, w, 1, 86400 * 7);
  if (r.get_string(t, "certificate", tls.certificate, w, true)) {
    tls.certificate = r.resolve(tls.certificate);
    r.readable_file(t.get("certificate"), tls.certificate, "certificate");
  }
  if (r.get_string(t, "private_key", tls.private_key, w, true)) {
    tls.private_key = r.resolve(tls.private_key);
    r.readable_file(t.get("private_key"), tls.private_key, "private key");
    check_key_mode(r, t.get("private_key"), tls.private_key);
  }
  for (const toml::table* st : r.get_tables(t, "sni")) {
    SniCertificate sni;
    std::string sw = w + " sni";
    r.only_keys(*st, {"server_names", "certificate", "private_key"}, sw);
    sni.server_names = r.get_strings(*st, "server_names", sw);
    if (sni.server_names.empty())
      r.error(st->source(), sw + ": 'server_names' is required");
    if (r.get_string(*st, "certificate", sni.certificate, sw, true)) {
      sni.certificate = r.resolve(sni.certificate);
      r.readable_file(st->get("certificate"), sni.certificate, "certificate");
    }
    if (r.get_string(*st, "private_key", sni.private_key, sw, true)) {
      sni.private_key = r.resolve(sni.private_key);
      r.readable_file(st->get("private_key"), sni.private_key, "private key");
      check_key_mode(r, st->get("private_key"), sni.private_key);
    }
    tls.sni.push_back(std::move(sni));
  }
}

void read_listener(Reader& r, const toml::table& t, Config& c) {
  const std::string w = "[[listener]]";
  r.only_keys(
      t, {"address", "tls", "access_log", "access_log_format", "max_connections", "proxy_protocol"},
      w);
  ListenerConfig l;
  r.get_bool(t, "proxy_protocol", l.proxy_protocol, w);
  std::string addr;
  if (r.get_string(t, "address", addr, w, true)) {
    if (auto a = core::parse_listen_address(addr)) {
      l.address = *a;
      for (size_t i = 0; i < c.listeners.size(); ++i)
        if (core::same_socket(c.listeners[i].address, *a))
          r.error(t.get("address")->source(), w + ": address '" + addr + "' is also listener " +
                                                  std::to_string(i + 1) + "'s ('" +
                                                  c.listeners[i].address.text +
                                                  "'): two listeners cannot share "
                                                  "a socket");
    } else {
      r.error(t.get("address")->source(), a.error());
    }
  }
  if (const toml::table* tls = r.get_table(t, "tls", w)) {
    l.tls_enabled = true;
    read_tls(r, *tls, l.tls, w + " tls");
  }
  if (r.get_string(t, "access_log", l.access_log, w))
    l.access_log = r.resolve(l.access_log);
  r.get_number(t, "max_connections", l.max_connections, w, 0, 10000000);
  if (r.get_string(t, "access_log_format", l.access_log_format, w) &&
      l.access_log_format != "text" && l.access_log_format != "json")
    r.error(t.get("access_log_format")->source(), w + ": access_log_format is text or json");
  c.listeners.push_back(std::move(l));
}

// "2xx", "200", "200-399" into [min, max].
bool parse_status_range(const std::string& s, int* min, int* max) {
  auto number = [](std::string_view v, int* out) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
    return ec == std::errc() && p == v.data() + v.size() && *out >= 100 && *out <= 599;
  };
  if (s.size() == 3 && s[1] == 'x' && s[2] == 'x' && s[0] >= '1' && s[0] <= '5') {
    *min = (s[0] - '0') * 100;
    *max = *min + 99;
    return true;
  }
  auto dash = s.find('-');
  if (dash == std::string::npos)
    return number(s, min) && number(s, max);
  return number(std::string_view(s).substr(0, dash), min) &&
         number(std::string_view(s).substr(dash + 1), max) && *min <= *max;
}

void read_cluster(Reader& r, const toml::table& t, Config& c) {
  const std::string w = "[[cluster]]";
  r.only_keys(t,
              {"name", "endpoints", "protocol", "max_connections", "queue_timeout",
               "connect_timeout", "send_timeout", "response_timeout", "idle_timeout",
               "max_idle_per_endpoint", "retry_on_reset", "retry_non_idempotent",
               "max_response_header_bytes", "fail_timeout", "h2_connections", "send_proxy_protocol",
               "tls", "lb", "health_check"},
              w);
  ClusterConfig cl;
  r.get_string(t, "name", cl.name, w, true);
  for (const auto& other : c.clusters)
    if (!cl.name.empty() && other.name == cl.name)
      r.error(t.get("name")->source(), "cluster '" + cl.name + "' is defined twice");
  const std::string cw = "cluster '" + cl.name + "'";
  // Each endpoint a string, or { address = "...", weight = N }.
  if (const toml::array* a = t.get("endpoints") ? t.get("endpoints")->as_array() : nullptr) {
    for (const auto& e : *a) {
      if (auto s = e.value<std::string>()) {
        cl.endpoints.push_back(*s);
        cl.weights.push_back(1);
      } else if (const toml::table* et = e.as_table()) {
        const std::string ew = cw + " endpoint";
        r.only_keys(*et, {"address", "weight"}, ew);
        std::string address;
        r.get_string(*et, "address", address, ew, true);
        int weight = 1;
        r.get_number(*et, "weight", weight, ew, 1, 1000);
        cl.endpoints.push_back(address);
        cl.weights.push_back(weight);
      } else {
        r.error(e.source(), cw + ": an endpoint is a string or { address, weight }");
      }
    }
  } else {
    cl.endpoints = r.get_strings(t, "endpoints", cw);
    cl.weights.assign(cl.endpoints.size(), 1);
  }
  if (const toml::table* ht = r.get_table(t, "health_check", cw)) {
    const std::string hw = cw + " health_check";
    HealthCheckConfig& hc = cl.health_check;
    hc.enabled = true;
    r.only_keys(*ht, {"path", "host", "interval", "timeout", "healthy", "unhealthy", "expect"}, hw);
    if (r.get_string(*ht, "path", hc.path, hw) && (hc.path.empty() || hc.path[0] != '/'))
      r.error(ht->get("path")->source(), hw + ": path must start with '/'");
    r.get_string(*ht, "host", hc.host, hw);
    r.get_number(*ht, "interval", hc.interval, hw, 0.01, 86400);
    r.get_number(*ht, "timeout", hc.timeout, hw, 0.001, 3600);
    r.get_number(*ht, "healthy", hc.healthy, hw, 1, 100);
    r.get_number(*ht, "unhealthy", hc.unhealthy, hw, 1, 100);
    std::string expect;
    if (r.get_string(*ht, "expect", expect, hw) &&
        !parse_status_range(expect, &hc.expect_min, &hc.expect_max))
      r.error(ht->get("expect")->source(),
              hw + ": expect is a status (\"200\"), a class (\"2xx\") or a range (\"200-399\")");
  }
  if (r.get_string(t, "lb", cl.lb, cw) && cl.lb != "least_request" && cl.lb != "round_robin" &&
      cl.lb != "random_two")
    r.error(t.get("lb")->source(),
            cw + ": lb is \"least_request\", \"round_robin\" or \"random_two\"");
  if (cl.endpoints.empty())
    r.error(t.source(), cw + ": 'endpoints' needs at least one endpoint");
  for (size_t i = 0; i < cl.endpoints.size(); ++i) {
    auto parsed = core::parse_endpoint(cl.endpoints[i]);
    if (parsed)
      continue;
    const std::string& why = parsed.error();
    const toml::node* n = t.get("endpoints");
    if (const toml::array* a = n->as_array(); a && i < a->size())
      n = a->get(i); // point at the entry itself
    r.error(n->source(), cw + ": endpoint '" + cl.endpoints[i] + "' " + why);
  }
  if (r.get_string(t, "protocol", cl.protocol, cw) && cl.protocol != "http1" &&
      cl.protocol != "h2c")
    r.error(t.get("protocol")->source(), cw + ": protocol must be \"http1\" or \"h2c\"");
  if (const toml::table* tt = r.get_table(t, "tls", cw)) {
    const std::string tw = cw + " tls";
    ClusterTlsConfig& tls = cl.tls;
    tls.enabled = true;
    r.only_keys(*tt, {"ca", "server_name", "certificate", "private_key", "verify"}, tw);
    r.get_bool(*tt, "verify", tls.verify, tw);
    r.get_string(*tt, "server_name", tls.server_name, tw);
    if (r.get_string(*tt, "ca", tls.ca, tw)) {
      tls.ca = r.resolve(tls.ca);
      r.readable_file(tt->get("ca"), tls.ca, "CA bundle");
    }
    bool cert = r.get_string(*tt, "certificate", tls.certificate, tw);
    bool key = r.get_string(*tt, "private_key", tls.private_key, tw);
    if (cert) {
      tls.certificate = r.resolve(tls.certificate);
      r.readable_file(tt->get("certificate"), tls.certificate, "certificate");
    }
    if (key) {
      tls.private_key = r.resolve(tls.private_key);
      r.readable_file(tt->get("private_key"), tls.private_key, "private key");
      check_key_mode(r, tt->get("private_key"), tls.private_key);
    }
    if (cert != key)
      r.error(tt->source(), tw + ": a client certificate needs both certificate and private_key");
  }
  if (r.get_string(t, "send_proxy_protocol", cl.send_proxy_protocol, cw) &&
      !cl.send_proxy_protocol.empty()) {
    if (cl.send_proxy_protocol != "v1" && cl.send_proxy_protocol != "v2")
      r.error(t.get("send_proxy_protocol")->source(),
              cw + ": send_proxy_protocol must be \"v1\", \"v2\" or \"\" (none)");
    else if (cl.tls.enabled)
      r.error(t.get("send_proxy_protocol")->source(),
              cw + ": send_proxy_protocol with tls is not built yet (the header goes before the "
                   "TLS handshake)");
    else if (cl.protocol != "http1")
      r.error(t.get("send_proxy_protocol")->source(),
              cw + ": send_proxy_protocol needs protocol \"http1\": an h2c connection carries "
                   "many clients' requests, and the header names one client");
  }
  r.get_number(t, "max_connections", cl.max_connections, cw, 0, 1e6);
  r.get_number(t, "queue_timeout", cl.queue_timeout, cw, 0, 86400);
  r.get_number(t, "connect_timeout", cl.connect_timeout, cw, 0.001, 86400);
  r.get_number(t, "send_timeout", cl.send_timeout, cw, 0.001, 86400);
  r.get_number(t, "response_timeout", cl.response_timeout, cw, 0.001, 86400);
  r.get_number(t, "idle_timeout", cl.idle_timeout, cw, 0, 86400);
  r.get_number(t, "max_idle_per_endpoint", cl.max_idle_per_endpoint, cw, 0, 1e6);
  r.get_bool(t, "retry_on_reset", cl.retry_on_reset, cw);
  r.get_bool(t, "retry_non_idempotent", cl.retry_non_idempotent, cw);
  r.get_number(t, "max_response_header_bytes", cl.max_response_header_bytes, cw, 1024, 1 << 24);
  r.get_number(t, "fail_timeout", cl.fail_timeout, cw, 0, 86400);
  r.get_number(t, "h2_connections", cl.h2_connections, cw, 1, 1024);
  c.clusters.push_back(std::move(cl));
}

// Leaves m.buckets holding the bounds the histograms use, listed or log-spaced.
void read_metrics(Reader& r, const toml::table& t, MetricsConfig& m) {
  const std::string w = "[metrics]";
  r.only_keys(t, {"enabled", "buckets", "bucket_min", "bucket_max", "buckets_per_decade"}, w);
  r.get_bool(t, "enabled", m.enabled, w);
  if (const toml::node* n = t.get("buckets")) {
    if (t.get("bucket_min") || t.get("bucket_max") || t.get("buckets_per_decade"))
      r.error(n->source(), w + ": 'buckets' lists the bounds; it cannot go with bucket_min, "
                               "bucket_max or buckets_per_decade");
    const toml::array* a = n->as_array();
    if (!a || a->empty())
      r.error(n->source(), w + ": 'buckets' must be a non-empty array of seconds");
    for (size_t i = 0; a && i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      std::optional<double> v =
          e.is_integer() ? std::optional<double>(*e.value<int64_t>()) : e.value<double>();
      if (!v || !(*v > 0) || !std::isfinite(*v)) {
        r.error(e.source(), w + ": each bucket bound must be a positive number of seconds");
        continue;
      }
      if (!m.buckets.empty() && *v <= m.buckets.back())
        r.error(e.source(), w + ": bucket bounds must increase");
      m.buckets.push_back(*v);
    }
  } else if (!t.get("bucket_min") && !t.get("bucket_max") && !t.get("buckets_per_decade")) {
    m.buckets = core::default_bounds();
  } else {
    r.get_number(t, "bucket_min", m.bucket_min, w, 1e-9, 86400);
    r.get_number(t, "bucket_max", m.bucket_max, w, 1e-9, 86400);
    r.get_number(t, "buckets_per_decade", m.buckets_per_decade, w, 1, 20);
    if (m.bucket_max <= m.bucket_min)
      r.error(t.source(), w + ": bucket_max must be above bucket_min");
    else
      m.buckets = core::log_spaced_bounds(m.bucket_min, m.bucket_max, m.buckets_per_decade);
  }
  if (m.buckets.size() > core::kMaxHistogramBuckets)
    r.error(t.source(), w + ": " + std::to_string(m.buckets.size()) + " buckets; at most " +
                            std::to_string(core::kMaxHistogramBuckets) + " are allowed");
}

// A table of field name -> value, names checked as tokens and lowered.
std::vector<std::pair<std::string, std::string>>
read_fields(Reader& r, const toml::table& t, std::string_view key, const std::string& w) {
  std::vector<std::pair<std::string, std::string>> out;
  const toml::table* ft = r.get_table(t, key, w);
  if (!ft)
    return out;
  for (const auto& [k, v] : *ft) {
    std::string name(k.str());
    bool token = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || std::strchr("!#$%&'*+-.^_`|~", ch);
    });
    auto value = v.value<std::string>();
    if (!token || !value || value->find_first_of("\r\n") != std::string::npos) {
      r.error(v.source(), w + ": " + std::string(key) + " maps field names to string values");
      continue;
    }
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    out.emplace_back(name, *value);
  }
  return out;
}

std::vector<std::string> read_field_names(Reader& r, const toml::table& t, std::string_view key,
                                          const std::string& w) {
  std::vector<std::string> out = r.get_strings(t, key, w);
  for (auto& name : out)
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

void read_route(Reader& r, const toml::table& t, Config& c) {
  const std::string w = "[[route]]";
  r.only_keys(t,
              {"host", "path_prefix", "path_exact", "path_regex", "scheme", "cluster", "websocket",
               "upgrade_timeout", "prefix_rewrite", "request_headers_add", "request_headers_remove",
               "response_headers_add", "response_headers_remove", "redirect", "direct_response",
               "timeout", "retry"},
              w);
  RouteConfig rt;
  r.get_string(t, "host", rt.host, w);
  r.get_bool(t, "websocket", rt.websocket, w);
  r.get_number(t, "upgrade_timeout", rt.upgrade_timeout, w, 0.001, 86400 * 7);
  int kinds = 0;
  if (r.get_string(t, "path_prefix", rt.path_prefix, w)) {
    ++kinds;
    if (rt.path_prefix.empty() || rt.path_prefix[0] != '/')
      r.error(t.get("path_prefix")->source(), w + ": path_prefix must start with '/'");
  }
  if (r.get_string(t, "path_exact", rt.path_exact, w)) {
    ++kinds;
    if (rt.path_exact.empty() || rt.path_exact[0] != '/')
      r.error(t.get("path_exact")->source(), w + ": path_exact must start with '/'");
  }
  if (r.get_string(t, "path_regex", rt.path_regex, w)) {
    ++kinds;
    re2::RE2 re(rt.path_regex, re2::RE2::Quiet);
    if (!re.ok())
      r.error(t.get("path_regex")->source(), w + ": path_regex: " + re.error());
  }
  if (kinds > 1)
    r.error(t.source(), w + ": one of path_prefix, path_exact and path_regex, not several");
  if (kinds == 1 && !t.get("path_prefix"))
    rt.path_prefix.clear(); // matched by path_exact or path_regex instead
  if (r.get_string(t, "scheme", rt.scheme, w) && rt.scheme != "http" && rt.scheme != "https")
    r.error(t.get("scheme")->source(), w + ": scheme is \"http\" or \"https\"");
  if (r.get_string(t, "prefix_rewrite", rt.prefix_rewrite, w)) {
    rt.has_prefix_rewrite = true;
    if (!t.get("path_prefix"))
      r.error(t.get("prefix_rewrite")->source(), w + ": prefix_rewrite needs a path_prefix");
    else if (rt.prefix_rewrite.empty() || rt.prefix_rewrite[0] != '/')
      r.error(t.get("prefix_rewrite")->source(), w + ": prefix_rewrite must start with '/'");
  }
  rt.request_headers_add = read_fields(r, t, "request_headers_add", w);
  rt.response_headers_add = read_fields(r, t, "response_headers_add", w);
  rt.request_headers_remove = read_field_names(r, t, "request_headers_remove", w);
  rt.response_headers_remove = read_field_names(r, t, "response_headers_remove", w);
  if (const toml::table* rd = r.get_table(t, "redirect", w)) {
    const std::string rw = w + " redirect";
    rt.has_redirect = true;
    r.only_keys(*rd, {"scheme", "host", "path", "code"}, rw);
    if (r.get_string(*rd, "scheme", rt.redirect.scheme, rw) && rt.redirect.scheme != "http" &&
        rt.redirect.scheme != "https")
      r.error(rd->get("scheme")->source(), rw + ": scheme is \"http\" or \"https\"");
    r.get_string(*rd, "host", rt.redirect.host, rw);
    if (r.get_string(*rd, "path", rt.redirect.path, rw) &&
        (rt.redirect.path.empty() || rt.redirect.path[0] != '/'))
      r.error(rd->get("path")->source(), rw + ": path must start with '/'");
    r.get_number(*rd, "code", rt.redirect.code, rw, 301, 308);
    int code = rt.redirect.code;
    if (code != 301 && code != 302 && code != 303 && code != 307 && code != 308)
      r.error(rd->source(), rw + ": code is 301, 302, 303, 307 or 308");
  }
  if (const toml::table* dr = r.get_table(t, "direct_response", w)) {
    const std::string dw = w + " direct_response";
    rt.has_direct_response = true;
    r.only_keys(*dr, {"status", "body", "content_type"}, dw);
    r.get_number(*dr, "status", rt.direct_response.status, dw, 200, 599);
    r.get_string(*dr, "body", rt.direct_response.body, dw);
    r.get_string(*dr, "content_type", rt.direct_response.content_type, dw);
  }
  if (rt.has_redirect && rt.has_direct_response)
    r.error(t.source(), w + ": redirect or direct_response, not both");
  r.get_number(t, "timeout", rt.timeout, w, 0, 86400);
  if (const toml::table* rr = r.get_table(t, "retry", w)) {
    const std::string rw = w + " retry";
    r.only_keys(*rr, {"on_reset", "non_idempotent"}, rw);
    bool v = false;
    if (rr->get("on_reset")) {
      r.get_bool(*rr, "on_reset", v, rw);
      rt.retry_on_reset = v ? 1 : 0;
    }
    if (rr->get("non_idempotent")) {
      r.get_bool(*rr, "non_idempotent", v, rw);
      rt.retry_non_idempotent = v ? 1 : 0;
    }
  }
  bool answers_itself = rt.has_redirect || rt.has_direct_response;
  if (r.get_string(t, "cluster", rt.cluster, w, !answers_itself)) {
    bool found = false;
    for (size_t i = 0; i < c.clusters.size(); ++i)
      if (c.clusters[i].name == rt.cluster) {
        rt.cluster_index = i;
        found = true;
      }
    if (!found)
      r.error(t.get("cluster")->source(), w + ": no cluster named '" + rt.cluster + "'");
    else if (rt.websocket && c.clusters[rt.cluster_index].protocol != "http1")
      r.error(t.get("websocket")->source(),
              w + ": websocket needs a cluster that speaks http1 (an HTTP/1.1 Upgrade); '" +
                  rt.cluster + "' speaks " + c.clusters[rt.cluster_index].protocol);
  }
  c.routes.push_back(std::move(rt));
}

} // namespace

std::optional<Config> parse_config(std::string_view text, const std::string& path,
                                   std::vector<std::string>* errors) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    errors->push_back(path + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                      ": " + std::string(e.description()));
    return std::nullopt;
  }
  Reader r(path, errors);
  Config c;
  c.path = path;
  r.only_keys(root, {"server", "listener", "admin", "metrics", "cluster", "route", "log"},
              "the top level");
  if (const toml::table* l = r.get_table(root, "log", "top level")) {
    r.only_keys(*l, {"level", "file"}, "[log]");
    std::string level;
    if (r.get_string(*l, "level", level, "[log]") &&
        !core::log::parse_level(level.c_str(), &c.log.level))
      r.error(l->get("level")->source(),
              "[log]: level is \"debug\", \"info\", \"warn\" or \"error\"");
    r.get_string(*l, "file", c.log.file, "[log]");
  }
  if (const toml::table* s = r.get_table(root, "server", "top level"))
    read_server(r, *s, c.server);
  for (const toml::table* t : r.get_tables(root, "listener"))
    read_listener(r, *t, c);
  if (c.listeners.empty())
    r.error(root.source(), "at least one [[listener]] is required");
  c.admin.address = *core::parse_listen_address("127.0.0.1:9901");
  if (const toml::table* a = r.get_table(root, "admin", "top level")) {
    r.only_keys(*a, {"address", "enabled"}, "[admin]");
    std::string addr;
    if (r.get_string(*a, "address", addr, "[admin]")) {
      if (auto pa = core::parse_listen_address(addr))
        c.admin.address = *pa;
      else
        r.error(a->get("address")->source(), pa.error());
    }
    r.get_bool(*a, "enabled", c.admin.enabled, "[admin]");
  }
  if (c.admin.enabled) {
    const toml::table* a = root.get_as<toml::table>("admin");
    const toml::node* at = a && a->get("address") ? a->get("address") : &root;
    for (const auto& l : c.listeners)
      if (core::same_socket(l.address, c.admin.address))
        r.error(at->source(), "[admin]: address '" + c.admin.address.text +
                                  "' is also a listener's ('" + l.address.text + "')");
  }
  if (const toml::table* m = r.get_table(root, "metrics", "top level"))
    read_metrics(r, *m, c.metrics);
  else
    c.metrics.buckets = core::default_bounds();
  for (const toml::table* t : r.get_tables(root, "cluster"))
    read_cluster(r, *t, c);
  // Routes refer to clusters by name: read after every cluster is known.
  for (const toml::table* t : r.get_tables(root, "route"))
    read_route(r, *t, c);
  if (c.routes.empty())
    r.error(root.source(), "at least one [[route]] is required");
  if (r.failed())
    return std::nullopt;
  c.warnings = std::move(r.warnings);
  return c;
}

std::optional<Config> load_config(const std::string& path, std::vector<std::string>* errors) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors->push_back(path + ":1:1: cannot open the file");
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path, errors);
}

} // namespace portico::config
