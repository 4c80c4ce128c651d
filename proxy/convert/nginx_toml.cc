// The converted configuration as TOML, in the order portico.toml(5) documents the tables.
#include "convert/nginx_model.h"
#include "convert/nginx_values.h"

namespace portico::convert {

namespace {

// A comment's text: on one line and valid UTF-8 whatever the nginx file held (a name or a
// path of raw bytes would make the TOML unreadable).
std::string comment(const std::string& text) {
  std::string quoted = toml_string(text);
  return quoted.substr(1, quoted.size() - 2);
}

void keys(std::string& out, const TomlKeys& k) {
  for (const auto& [key, value] : k)
    out += key + " = " + value + "\n";
}

std::string listener_tls(const ListenerOut& l) {
  std::string t = "{ certificate = " + toml_string(l.certificate) +
                  ", private_key = " + toml_string(l.private_key);
  if (!l.min_version.empty())
    t += ", min_version = " + toml_string(l.min_version);
  if (!l.ciphers.empty())
    t += ", ciphers = " + toml_string(l.ciphers);
  if (!l.sni.empty()) {
    t += ", sni = [";
    for (size_t i = 0; i < l.sni.size(); ++i)
      t += std::string(i ? ", " : "") + "{ server_names = " + toml_strings(l.sni[i].server_names) +
           ", certificate = " + toml_string(l.sni[i].certificate) +
           ", private_key = " + toml_string(l.sni[i].private_key) + " }";
    t += "]";
  }
  return t + " }";
}

} // namespace

std::string write_toml(const ConvertedConfig& c, const std::string& source) {
  std::string out = "# Converted from " + comment(source) + " by portico convert-nginx.\n";
  if (!c.warnings.empty())
    out += "# " + std::to_string(c.warnings.size()) +
           " directives were not carried over: convert-nginx printed each with its FILE:LINE.\n";
  out += "# Routes match in this file's order, the first that matches wins: nginx's order of\n"
         "# locations (exact, ^~ prefixes, regular expressions, longest prefix) is kept by\n"
         "# writing them in that order.\n";
  if (!c.server.empty()) {
    out += "\n[server]\n";
    keys(out, c.server);
  }
  if (!c.log.empty()) {
    out += "\n[log]\n";
    keys(out, c.log);
  }
  for (const auto& l : c.listeners) {
    out += "\n[[listener]]  # " + comment(l.where) + "\naddress = " + toml_string(l.address) + "\n";
    if (l.proxy_protocol)
      out += "proxy_protocol = true\n";
    if (l.tls)
      out += "tls = " + listener_tls(l) + "\n";
    if (!l.access_log.empty()) {
      out += "access_log = " + toml_string(l.access_log) + "\n";
      out += "access_log_format = " + toml_string(l.access_log_format) + "\n";
    }
  }
  out += "\n[admin]  # metrics, health, the dashboard: nginx had none of these\n"
         "address = \"127.0.0.1:9901\"\n";
  for (const auto& cl : c.clusters) {
    out += "\n[[cluster]]  # " + comment(cl.where) + "\nname = " + toml_string(cl.name) +
           "\nendpoints = [";
    for (size_t i = 0; i < cl.endpoints.size(); ++i) {
      const auto& e = cl.endpoints[i];
      out += i ? ", " : "";
      out += e.weight == 1 ? toml_string(e.address)
                           : "{ address = " + toml_string(e.address) +
                                 ", weight = " + std::to_string(e.weight) + " }";
    }
    out += "]\n";
    keys(out, cl.keys);
    if (cl.connect_timeout)
      out += "connect_timeout = " + toml_number(*cl.connect_timeout) + "\n";
    if (cl.response_timeout)
      out += "response_timeout = " + toml_number(*cl.response_timeout) + "\n";
    if (cl.send_timeout)
      out += "send_timeout = " + toml_number(*cl.send_timeout) + "\n";
    if (cl.tls)
      out += "tls = { verify = false }  # nginx's proxy_ssl_verify is off unless set\n";
  }
  for (const auto& r : c.routes) {
    out += "\n[[route]]  # " + comment(r.where) + "\n";
    if (!r.note.empty())
      out += "# " + comment(r.note) + "\n";
    if (!r.host.empty())
      out += "host = " + toml_string(r.host) + "\n";
    if (!r.scheme.empty())
      out += "scheme = " + toml_string(r.scheme) + "\n";
    out += r.path_key + " = " + toml_string(r.path) + "\n";
    keys(out, r.keys);
  }
  return out;
}

} // namespace portico::convert
