#include "config/sections.h"

namespace portico::config {

namespace {

// "text", "combined" and "json", or a template of $fields: parsed here, so that a misspelt
// field is an error at load and a line costs no parsing.
void read_access_log_format(Reader& r, const toml::table& t, ListenerConfig& l,
                            const std::string& w) {
  std::string s;
  if (r.get_string(t, "access_log_format", s, w)) {
    if (auto named = enum_named(kAccessLogFormats, s)) {
      l.access_log_format = *named;
    } else if (s.find('$') == std::string::npos) {
      r.error(t.get("access_log_format")->source(),
              w + ": access_log_format is text, combined, json, or a template of $fields (" +
                  std::string(log_field_names()) + ")");
      return;
    } else {
      l.access_log_format = AccessLogFormat::CUSTOM;
      l.access_log_template = s;
    }
  }
  if (l.access_log_format == AccessLogFormat::JSON)
    return;
  std::string_view text = l.access_log_format == AccessLogFormat::CUSTOM     ? l.access_log_template
                          : l.access_log_format == AccessLogFormat::COMBINED ? kCombinedLogFormat
                                                                             : kTextLogFormat;
  if (auto line = parse_log_format(text))
    l.access_log_line = std::move(*line);
  else
    r.error(t.get("access_log_format")->source(), w + ": access_log_format: " + line.error());
}

} // namespace

void read_listener(Reader& r, const toml::table& t, Config& c) {
  const std::string w = "[[listener]]";
  r.only_keys(t,
              {"address", "tls", "access_log", "access_log_format", "max_connections",
               "max_connections_per_client", "proxy_protocol"},
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
  r.get_number(t, "max_connections_per_client", l.max_connections_per_client, w, 0, 1000000);
  // Counted at accept, by the peer: behind PROXY protocol that is the load balancer, which
  // would be held to one client's share.
  if (l.max_connections_per_client && l.proxy_protocol)
    r.error(t.get("max_connections_per_client")->source(),
            w + ": max_connections_per_client counts the peer, which on a proxy_protocol "
                "listener is the load balancer; not with proxy_protocol");
  read_access_log_format(r, t, l, w);
  c.listeners.push_back(std::move(l));
}

} // namespace portico::config
