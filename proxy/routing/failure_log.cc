#include "routing/failure_log.h"

#include "core/error_log.h"
#include "core/json_escape.h"

#include <string>

namespace portico::routing {

void log_kept_failure(std::string_view cluster, std::string_view endpoint, const char* what) {
  using namespace core::log;
  if (!enabled(Level::WARN))
    return;
  std::string c(cluster.empty() ? std::string_view("-") : cluster);
  std::string e(endpoint.empty() ? std::string_view("-") : endpoint);
  write_about(Level::WARN, Kind::REQUEST_FAILED, cluster,
              "cluster %s: %s; a response kept for the cache after its client went is cut; "
              "upstream: %s",
              c.c_str(), what, e.c_str());
}

void log_request_failure(const server::Exchange& ex, std::string_view cluster,
                         std::string_view endpoint, int status, const char* what) {
  using namespace core::log;
  if (!enabled(Level::WARN))
    return;
  // The request's text is the client's: escaped, so that a line is one line.
  thread_local std::string host, request, answer;
  const auto& req = ex.request();
  host.clear();
  core::append_json_escaped(host, req.authority);
  request.clear();
  core::append_json_escaped(request, req.method);
  request.push_back(' ');
  core::append_json_escaped(request, req.target);
  request.append(req.version == http::Version::HTTP_3   ? " HTTP/3"
                 : req.version == http::Version::HTTP_2 ? " HTTP/2"
                                                        : " HTTP/1.1");
  answer = status ? "answered " + std::to_string(status) : std::string("response cut");
  std::string c(cluster.empty() ? std::string_view("-") : cluster);
  std::string e(endpoint.empty() ? std::string_view("-") : endpoint);
  std::string client(ex.client_address());
  write_about(Level::WARN, Kind::REQUEST_FAILED, cluster,
              "cluster %s: %s, %s; upstream: %s, client: %s, host: \"%s\", request: \"%s\"",
              c.c_str(), what, answer.c_str(), e.c_str(), client.c_str(), host.c_str(),
              request.c_str());
}

} // namespace portico::routing
