#pragma once
// convert-nginx's walk over an nginx configuration (nginx_converter.h is its interface): one
// class, its parts in nginx_converter.cc (main and http blocks), nginx_scope_directives.cc
// (what locations inherit), nginx_upstreams.cc (upstream blocks, proxy_pass, zones) and
// nginx_servers.cc (server blocks, locations and their order, routes).
#include "convert/nginx_converter.h"
#include "convert/nginx_model.h"
#include "convert/nginx_scope.h"
#include "convert/nginx_values.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace portico::convert {

struct Location {
  const Directive* d = nullptr;
  std::string modifier; // "", "=", "^~", "~", "~*"
  std::string path;
  Scope scope;
  const Directive* proxy_pass = nullptr;
  const Directive* ret = nullptr;
  std::vector<const Directive*> rewrites;
};

struct ServerInfo {
  const Directive* d = nullptr;
  Scope scope;
  std::vector<Listen> listens;
  std::vector<std::string> hosts; // Portico's host patterns for its server_name
  bool is_default = false;
  bool ssl_only = false, plain_only = false;
  const Directive* ret = nullptr; // a return at server level answers everything
  std::vector<const Directive*> rewrites;
  std::vector<Location> locations;       // in nginx's order of matching
  std::map<std::string, Location> named; // @name
};

struct LimitZone {
  std::vector<std::string> key;
  std::string rate;
  int64_t bytes = 0;
};

struct CacheZone {
  std::string path;
  std::optional<int64_t> max_size;
  int routes = 0; // each route gets a directory of its own beneath path
};

class Converter {
public:
  Conversion run(const NginxConfig& config, const std::string& source);

private:
  Conversion finish(const std::string& source);
  void warn(const Directive& d, const std::string& why);
  void not_carried(const Directive& d);
  void error_log(const Directive& d);
  void http(const Directive& h);
  bool server_directive(const Directive& d);
  // A directive a location inherits (root, gzip, proxy_set_header, ...) read into s; false
  // when d is not one.
  bool scope_directive(const Directive& d, Scope& s);
  void upstream(const Directive& d);
  void limit_req_zone(const Directive& d);
  void proxy_cache_path(const Directive& d);
  // The cluster proxy_pass names (made for a bare address), its index; *uri the path given.
  std::optional<size_t> proxy_pass_cluster(const Directive& d, std::string* uri);
  void give_timeouts(size_t cluster, const Scope& s, const Directive& where);

  ServerInfo read_server(const Directive& d, const Scope& http);
  void read_locations(const std::vector<Directive>& block, const Scope& outer, ServerInfo& s);
  void emit_servers(std::vector<ServerInfo>& servers);
  void emit_server(const ServerInfo& s, const std::vector<std::string>& hosts,
                   const std::string& scheme);
  // The route a location (or a stand-in for the server outside every location) becomes;
  // false when it cannot be converted (warned).
  bool location_route(const ServerInfo& s, const Location& loc, RouteOut& r);
  bool return_route(const Directive& ret, RouteOut& r);
  bool rewrite_route(const Directive& rw, RouteOut& r);
  void filters(const Scope& scope, const Directive& where, RouteOut& r);
  void listener_for(const ServerInfo& s, const Listen& l);

  ConvertedConfig out_;
  std::map<std::string, size_t> upstreams_; // name: cluster index
  std::map<std::string, LimitZone> limit_zones_;
  std::map<std::string, CacheZone> cache_zones_;
  bool max_body_set_ = false;
  std::optional<int64_t> http_max_body_;
};

} // namespace portico::convert
