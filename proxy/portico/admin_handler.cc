#include "portico/admin_handler.h"

#include "core/json_escape.h"
#include "metrics/exposition.h"
#include "portico/proxy_worker.h"

#include <unistd.h>

namespace portico::proxy {

namespace {

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  core::append_json_escaped(out, s);
  out.push_back('"');
}

} // namespace

AdminHandler::AdminHandler(std::shared_ptr<const config::Config> cfg,
                           const std::vector<std::unique_ptr<ProxyWorker>>& workers,
                           double started_at)
    : cfg_(std::move(cfg)), workers_(workers), started_at_(started_at) {}

void AdminHandler::set_config(std::shared_ptr<const config::Config> cfg) {
  cfg_ = std::move(cfg);
  ++reloads_;
}

std::string AdminHandler::status_json(double now) const {
  uint64_t opened = 0, closed = 0, requests = 0;
  for (const auto& w : workers_) {
    opened += w->server_stats().connections_accepted.get();
    closed += w->server_stats().connections_closed.get();
    requests += w->server_stats().requests.get();
  }
  std::string out = "{\"version\":";
  append_json_string(out, PORTICO_VERSION_STRING);
  out += ",\"pid\":" + std::to_string(static_cast<long long>(::getpid()));
  out += ",\"reloads\":" + std::to_string(reloads_);
  out += ",\"uptime_seconds\":" + std::to_string(static_cast<long long>(now - started_at_));
  out += ",\"workers\":" + std::to_string(workers_.size());
  out += draining_ ? ",\"draining\":true" : ",\"draining\":false";
  out += ",\"client_connections\":" + std::to_string(opened - std::min(opened, closed));
  out += ",\"requests\":" + std::to_string(requests);
  out += ",\"clusters\":[";
  std::vector<const metrics::WorkerMetrics*> shards;
  for (const auto& w : workers_)
    shards.push_back(&w->metrics());
  for (size_t i = 0; i < cfg_->clusters.size(); ++i) {
    const auto& c = cfg_->clusters[i];
    out += i ? ",{\"name\":" : "{\"name\":";
    append_json_string(out, c.name);
    out += ",\"max_connections\":" + std::to_string(c.max_connections);
    out += ",\"endpoints\":[";
    for (size_t e = 0; e < c.endpoints.size(); ++e) {
      metrics::EndpointTotals t = metrics::endpoint_totals(shards, i, e);
      out += e ? ",{\"address\":" : "{\"address\":";
      append_json_string(out, c.endpoints[e]);
      out += t.up() ? ",\"health\":\"up\"" : ",\"health\":\"down\"";
      if (c.health_check.enabled)
        out += t.unhealthy ? ",\"health_check\":\"failing\"" : ",\"health_check\":\"passing\"";
      out += ",\"connect_failures\":" + std::to_string(t.connect_failures);
      out += ",\"idle\":" + std::to_string(t.idle);
      out += ",\"busy\":" + std::to_string(t.busy);
      out += ",\"queue_depth\":" + std::to_string(t.waiting);
      out += ",\"in_flight\":" + std::to_string(t.busy + t.waiting) + "}";
    }
    out += "]}";
  }
  out += "]}\n";
  return out;
}

void AdminHandler::on_request(server::Exchange& ex) {
  std::string_view path = ex.request().path();
  double now = ev_time();
  if (ex.request().method != "GET" && ex.request().method != "HEAD") {
    ex.respond(405, "text/plain", "GET or HEAD\n");
  } else if (path == "/metrics") {
    std::vector<const metrics::WorkerMetrics*> shards;
    std::vector<const server::ServerStats*> servers;
    for (const auto& w : workers_) {
      shards.push_back(&w->metrics());
      servers.push_back(&w->server_stats());
    }
    std::string body = metrics::expose(*cfg_, shards, servers, now - started_at_);
    ex.respond(200, "text/plain; version=0.0.4; charset=utf-8", body);
  } else if (path == "/healthz") {
    ex.respond(200, "text/plain", "ok\n");
  } else if (path == "/readyz") {
    if (draining_)
      ex.respond(503, "text/plain", "draining\n");
    else
      ex.respond(200, "text/plain", "ready\n");
  } else if (path == "/status") {
    ex.respond(200, "application/json", status_json(now));
  } else {
    ex.respond(404, "text/plain", "not found: try /metrics, /healthz, /readyz, /status\n");
  }
}

} // namespace portico::proxy
