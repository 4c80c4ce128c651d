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

// quic = true, or a table of its limits.
void read_quic(Reader& r, const toml::table& t, ListenerConfig& l, const std::string& w) {
  const toml::node* n = t.get("quic");
  if (!n)
    return;
  if (n->is_boolean()) {
    l.quic.enabled = *n->value<bool>();
  } else if (const toml::table* q = n->as_table()) {
    const std::string wq = w + " quic";
    r.only_keys(*q,
                {"max_streams", "idle_timeout", "stream_window", "connection_window",
                 "max_connections", "retry_above_handshakes"},
                wq);
    l.quic.enabled = true;
    r.get_number(*q, "max_streams", l.quic.max_streams, wq, 1, 10000);
    r.get_number(*q, "idle_timeout", l.quic.idle_timeout, wq, 1, 3600);
    r.get_number(*q, "stream_window", l.quic.stream_window, wq, 1024, 64 * 1024 * 1024);
    r.get_number(*q, "connection_window", l.quic.connection_window, wq, 1024, 1024 * 1024 * 1024);
    r.get_number(*q, "max_connections", l.quic.max_connections, wq, 1, 10000000);
    r.get_number(*q, "retry_above_handshakes", l.quic.retry_above_handshakes, wq, 0, 10000000);
  } else {
    r.error(n->source(), w + ": 'quic' must be true, false or a table");
    return;
  }
  if (!l.quic.enabled)
    return;
  // HTTP/3 has TLS inside: its handshake takes the TLS listener's certificates.
  if (!l.tls_enabled)
    r.error(n->source(), w + ": quic needs the listener's tls (HTTP/3 is always encrypted)");
  else if (l.address.kind == core::ListenAddress::Kind::UNIX)
    r.error(n->source(), w + ": quic needs an IP address and port, not a unix socket");
  else if (l.proxy_protocol)
    r.error(n->source(), w + ": quic cannot take a PROXY protocol header (it is UDP)");
}

} // namespace

void read_listener(Reader& r, const toml::table& t, Config& c) {
  const std::string w = "[[listener]]";
  r.only_keys(t,
              {"address", "tls", "access_log", "access_log_format", "max_connections",
               "max_connections_per_client", "proxy_protocol", "quic"},
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
  read_quic(r, t, l, w);
  c.listeners.push_back(std::move(l));
}

} // namespace portico::config
