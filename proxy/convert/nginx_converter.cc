#include "convert/nginx_converter.h"

#include "convert/converter.h"
#include "convert/nginx_model.h"
#include "convert/nginx_scope.h"
#include "convert/nginx_values.h"

#include <algorithm>
#include <map>
#include <set>

namespace portico::convert {

namespace {

// Directives that need nothing in Portico: it does the same by itself.
const std::set<std::string> kBuiltIn = {"sendfile",
                                        "tcp_nopush",
                                        "tcp_nodelay",
                                        "http2",
                                        "proxy_http_version",
                                        "gzip_vary",
                                        "ssl_prefer_server_ciphers",
                                        "ssl_session_cache",
                                        "ssl_session_timeout",
                                        "ssl_session_tickets",
                                        "server_tokens",
                                        "types_hash_max_size",
                                        "types_hash_bucket_size",
                                        "default_type",
                                        "types",
                                        "server_names_hash_bucket_size",
                                        "server_names_hash_max_size",
                                        "zone",
                                        "proxy_buffering",
                                        "proxy_request_buffering",
                                        "charset",
                                        "resolver_timeout",
                                        "proxy_cache_lock",
                                        "multi_accept",
                                        "accept_mutex",
                                        "use",
                                        "worker_connections",
                                        "worker_rlimit_nofile",
                                        "reset_timedout_connection"};

const char* builtin_reason(const std::string& name) {
  if (name == "types" || name == "default_type")
    return "content types come from /etc/mime.types (Debian's media-types)";
  if (name == "worker_connections" || name == "worker_rlimit_nofile")
    return "[server] max_connections follows the open-file limit by default";
  if (name == "proxy_buffering" || name == "proxy_request_buffering")
    return "Portico streams bodies both ways with bounded buffers";
  return "Portico does this by itself";
}

} // namespace

void Converter::warn(const Directive& d, const std::string& why) {
  out_.warnings.push_back(d.where() + ": warning: " + d.name + ": " + why);
}

void Converter::not_carried(const Directive& d) {
  if (kBuiltIn.count(d.name))
    warn(d, std::string("not needed: ") + builtin_reason(d.name));
  else
    warn(d, "not carried over (no Portico equivalent in this converter)");
}

Conversion Converter::run(const NginxConfig& config, const std::string& source) {
  // A file of server blocks (Debian's sites-available/default) is read as the inside of an
  // http block, as nginx.conf's include would have it.
  bool has_http = false, has_server = false;
  for (const auto& d : config.directives) {
    has_http |= d.name == "http";
    has_server |= d.name == "server" || d.name == "upstream";
  }
  if (has_server && !has_http) {
    Directive h;
    h.name = "http";
    h.has_block = true;
    h.block = config.directives;
    http(h);
    return finish(source);
  }
  for (const auto& d : config.directives) {
    if (d.name == "http" && d.has_block)
      http(d);
    else if (d.name == "worker_processes" && d.args.size() == 1 && nginx_count(d.args[0]))
      put(out_.server, "workers", std::to_string(*nginx_count(d.args[0])));
    else if (d.name == "worker_processes" && d.args.size() == 1 && d.args[0] == "auto")
      continue; // Portico's default: one per core
    else if (d.name == "pid" && d.args.size() == 1)
      put(out_.server, "pid_file", toml_string(d.args[0]));
    else if (d.name == "error_log")
      error_log(d);
    else if (d.name == "events" && d.has_block)
      for (const auto& e : d.block)
        not_carried(e);
    else
      not_carried(d);
  }
  return finish(source);
}

Conversion Converter::finish(const std::string& source) {
  Conversion c;
  c.warnings = out_.warnings;
  c.toml = write_toml(out_, source);
  return c;
}

void Converter::error_log(const Directive& d) {
  if (d.args.empty())
    return warn(d, "without a file");
  if (d.args[0] != "stderr" && d.args[0] != "/dev/stderr") {
    if (d.args[0].starts_with("syslog:"))
      return warn(d, "syslog is not carried over: Portico logs to a file or stderr");
    put(out_.log, "file", toml_string(d.args[0]));
  }
  if (d.args.size() > 1) {
    static const std::set<std::string> levels = {"debug", "info", "warn", "error"};
    std::string level = d.args[1] == "notice" ? "info" : d.args[1];
    if (levels.count(level))
      put(out_.log, "level", toml_string(level));
    else
      put(out_.log, "level", "\"error\"");
  }
}

void Converter::http(const Directive& h) {
  Scope scope;
  scope.index = {"index.html"};
  for (const auto& d : h.block) {
    if (d.name == "upstream" && d.has_block)
      upstream(d);
    else if (d.name == "limit_req_zone")
      limit_req_zone(d);
    else if (d.name == "proxy_cache_path")
      proxy_cache_path(d);
  }
  for (const auto& d : h.block) {
    if ((d.has_block && d.name != "types") || d.name == "limit_req_zone" ||
        d.name == "proxy_cache_path")
      continue;
    if (!scope_directive(d, scope) && !server_directive(d))
      not_carried(d);
  }
  std::vector<ServerInfo> servers;
  for (const auto& d : h.block)
    if (d.name == "server" && d.has_block)
      servers.push_back(read_server(d, scope));
    else if (d.has_block && d.name != "upstream" && d.name != "types")
      not_carried(d);
  emit_servers(servers);
  if (!max_body_set_)
    put(out_.server, "max_body_bytes", "1048576  # nginx's client_max_body_size default");
}

bool Converter::server_directive(const Directive& d) {
  auto seconds = [&](const char* key) {
    std::optional<double> s = d.args.empty() ? std::nullopt : nginx_seconds(d.args[0]);
    if (!s) {
      warn(d, "not a time nginx would take");
      return true;
    }
    put(out_.server, key, toml_number(*s));
    return true;
  };
  if (d.name == "keepalive_timeout")
    return seconds("keepalive_timeout");
  if (d.name == "client_header_timeout")
    return seconds("header_timeout");
  if (d.name == "send_timeout")
    return seconds("send_timeout");
  if (d.name == "resolver") {
    std::vector<std::string> servers;
    for (const auto& a : d.args)
      if (a.find('=') == std::string::npos)
        servers.push_back(a);
    put(out_.server, "resolvers", toml_strings(servers));
    return true;
  }
  return false;
}

Conversion convert_nginx(const NginxConfig& config, const std::string& source) {
  return Converter().run(config, source);
}

} // namespace portico::convert
