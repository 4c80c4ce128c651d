#include "config/sections.h"

#include "core/endpoint_address.h"

namespace portico::config {

void read_server(Reader& r, const toml::table& t, ServerConfig& s) {
  const std::string w = "[server]";
  r.only_keys(t,
              {"workers", "grace_period", "long_lived_drain", "keepalive_timeout", "header_timeout",
               "max_header_bytes", "max_body_bytes", "via", "forwarded", "trusted_proxies",
               "request_id_header", "h2_max_concurrent_streams", "h2_sleep_after", "send_timeout",
               "max_connections", "max_buffer_memory", "max_buffered_response_bytes", "pid_file",
               "resolvers"},
              w);
  r.get_number(t, "workers", s.workers, w, 0, 256);
  r.get_number(t, "grace_period", s.grace_period, w, 0, 86400);
  r.get_number(t, "long_lived_drain", s.long_lived_drain, w, 0, 86400);
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
  if (r.get_string(t, "pid_file", s.pid_file, w))
    s.pid_file = r.resolve(s.pid_file); // one rule for every path: the file's directory
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
  r.get_number(t, "h2_sleep_after", s.h2_sleep_after, w, 0, 86400);
}

} // namespace portico::config
