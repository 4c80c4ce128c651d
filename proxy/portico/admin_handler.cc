#include "portico/admin_handler.h"

#include "core/error_log.h"
#include "core/json_escape.h"
#include "metrics/cluster_policy_counters.h"
#include "metrics/dashboard_page.h"
#include "metrics/exposition.h"
#include "metrics/limit_counters.h"
#include "metrics/live_groups.h"
#include "portico/admin_guard.h"
#include "portico/proxy_worker.h"
#include "server/streamed_reply.h"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace portico::proxy {

AdminHandler::AdminHandler(std::shared_ptr<const config::Config> cfg,
                           const std::vector<std::unique_ptr<ProxyWorker>>& workers,
                           double started_at, struct ev_loop* loop)
    : cfg_(std::move(cfg)), workers_(workers), started_at_(started_at), loop_(loop),
      live_(metrics::live_phases(),
            cfg_->metrics.enabled ? cfg_->metrics.buckets : std::vector<double>{}),
      purges_(workers, loop) {
  ev_timer_init(&sample_timer_, sample_cb, 0, 1.0);
  sample_timer_.data = this;
  ev_timer_start(loop_, &sample_timer_);
}

AdminHandler::~AdminHandler() {
  ev_timer_stop(loop_, &sample_timer_);
}

void AdminHandler::sample_cb(struct ev_loop*, ev_timer* w, int) {
  static_cast<AdminHandler*>(w->data)->sample();
}

void AdminHandler::sample() {
  std::vector<const metrics::WorkerMetrics*> shards;
  for (const auto& w : workers_)
    shards.push_back(&w->metrics());
  live_.record(ev_time(), metrics::live_groups(*cfg_, shards));
}

std::string AdminHandler::stats_json(double now, uint64_t since) const {
  std::vector<const metrics::WorkerMetrics*> shards;
  int64_t conns[2][2] = {}; // protocol (h1, h2) x tls (no, yes)
  uint64_t streams = 0, dormant = 0;
  for (const auto& w : workers_) {
    shards.push_back(&w->metrics());
    const auto& st = w->server_stats();
    for (int p = 0; p < 2; ++p)
      for (int t = 0; t < 2; ++t)
        conns[p][t] += static_cast<int64_t>(st.sessions_opened[p][t].get()) -
                       static_cast<int64_t>(st.sessions_closed[p][t].get());
    streams += st.h2_streams_opened.get() -
               std::min(st.h2_streams_opened.get(), st.h2_streams_closed.get());
    dormant += st.h2_dormant_entered.get() -
               std::min(st.h2_dormant_entered.get(), st.h2_dormant_left.get());
  }
  std::string out = "{\"format\":1,\"server\":\"portico\",\"version\":";
  core::append_json_string(out, PORTICO_VERSION_STRING);
  out += ",\"pid\":" + std::to_string(static_cast<long long>(::getpid()));
  out += draining_ ? ",\"draining\":true" : ",\"draining\":false";
  out += ",\"uptime_seconds\":" + std::to_string(static_cast<long long>(now - started_at_));
  out += ",\"interval\":1,";
  live_.append_json(out, since);
  auto level = [](int64_t v) { return std::to_string(std::max<int64_t>(0, v)); };
  out += ",\"gauges\":{\"client_connections_h1\":" + level(conns[0][0]);
  out += ",\"client_connections_h1_tls\":" + level(conns[0][1]);
  out += ",\"client_connections_h2c\":" + level(conns[1][0]);
  out += ",\"client_connections_h2_tls\":" + level(conns[1][1]);
  out += ",\"h2_streams_active\":" + std::to_string(streams);
  out += ",\"h2_dormant_connections\":" + std::to_string(dormant) + "},\"tables\":[";
  for (size_t i = 0; i < cfg_->clusters.size(); ++i) {
    const auto& c = cfg_->clusters[i];
    out += i ? ",{\"title\":" : "{\"title\":";
    core::append_json_string(out, "cluster " + c.name);
    out += ",\"columns\":[\"endpoint\",\"health\",\"in flight\",\"idle\",\"busy\","
           "\"queue\"],\"rows\":[";
    auto outliers = c.outlier.enabled ? metrics::find_outlier_counters(c.name) : nullptr;
    for (size_t e = 0; e < c.endpoints.size(); ++e) {
      metrics::EndpointTotals t = metrics::endpoint_totals(shards, i, e);
      out += e ? ",[" : "[";
      core::append_json_string(out, c.endpoints[e]);
      bool ejected = outliers && e < outliers->endpoints.size() && outliers->ejected(e, now);
      out += ejected                                 ? ",\"ejected\""
             : !t.up()                               ? ",\"down\""
             : c.health_check.enabled && t.unhealthy ? ",\"failing checks\""
                                                     : ",\"up\"";
      out += "," + std::to_string(t.busy + t.waiting) + "," + std::to_string(t.idle) + "," +
             std::to_string(t.busy) + "," + std::to_string(t.waiting) + "]";
    }
    out += "]}";
  }
  append_cache_table(out, shards, !cfg_->clusters.empty());
  append_limit_tables(out);
  out += "]}\n";
  return out;
}

void AdminHandler::append_limit_tables(std::string& out) {
  // One table of rows NAME, COUNT... from each(f), where f(name, counters) is called per row.
  auto table = [&](const char* title, const char* columns, auto each) {
    bool any = false;
    each([&](const std::string& name, const auto& c) {
      if (!any) {
        out += out.back() == '[' ? "{\"title\":\"" : ",{\"title\":\"";
        out += title;
        out += "\",\"columns\":[";
        out += columns;
        out += "],\"rows\":[";
      }
      out += any ? ",[" : "[";
      any = true;
      core::append_json_string(out, name);
      for (const auto& r : c.results)
        out += "," + std::to_string(r.load(std::memory_order_relaxed));
      out += "]";
    });
    if (any)
      out += "]}";
  };
  table("limits", "\"limit\",\"allowed\",\"delayed\",\"refused\",\"dry run\",\"unchecked\"",
        [](const auto& f) { metrics::for_each_limit(f); });
  table("forward auth", "\"auth\",\"allowed\",\"denied\",\"error\",\"cached\"",
        [](const auto& f) { metrics::for_each_auth(f); });
  table("redis of shared limits",
        "\"redis\",\"answered\",\"errors\",\"late\",\"not sent\",\"workers connected\"",
        [](const auto& f) {
          metrics::for_each_store([&](const std::string& name, const metrics::StoreCounters& c) {
            struct {
              std::atomic<uint64_t> results[metrics::kStoreResultCount + 1];
            } row;
            for (size_t i = 0; i < metrics::kStoreResultCount; ++i)
              row.results[i] = c.results[i].load(std::memory_order_relaxed);
            row.results[metrics::kStoreResultCount] =
                static_cast<uint64_t>(c.connected.load(std::memory_order_relaxed));
            f(name, row);
          });
        });
}

// The caches' hit ratio and counts since start, once any route's cache has seen a request.
void AdminHandler::append_cache_table(std::string& out,
                                      const std::vector<const metrics::WorkerMetrics*>& shards,
                                      bool after_another) {
  uint64_t n[metrics::kCacheResultCount] = {};
  int64_t bytes = 0, objects = 0, waiting = 0;
  const auto& disk = metrics::disk_cache_levels();
  int64_t disk_bytes = disk.bytes.load(std::memory_order_relaxed);
  int64_t disk_objects = disk.objects.load(std::memory_order_relaxed);
  for (const auto* s : shards) {
    const auto& c = s->cache();
    for (size_t i = 0; i < metrics::kCacheResultCount; ++i)
      n[i] += c.results[i].get();
    bytes += c.stored_bytes.get();
    objects += c.stored_objects.get();
    waiting += c.waiting.get();
  }
  auto at = [&](metrics::CacheResult r) { return n[static_cast<size_t>(r)]; };
  uint64_t answered = at(metrics::CacheResult::HIT) + at(metrics::CacheResult::COLLAPSED) +
                      at(metrics::CacheResult::STALE);
  uint64_t all = answered + at(metrics::CacheResult::MISS) + at(metrics::CacheResult::REVALIDATED) +
                 at(metrics::CacheResult::BYPASS);
  if (all == 0 && objects == 0 && disk_objects == 0)
    return;
  char ratio[16];
  std::snprintf(ratio, sizeof ratio, "%.1f %%", all ? 100.0 * answered / all : 0.0);
  out += after_another ? ",{\"title\":\"cache\"" : "{\"title\":\"cache\"";
  out += ",\"columns\":[\"hit ratio\",\"hits\",\"collapsed\",\"stale\",\"revalidated\","
         "\"misses\",\"stored\",\"MiB\",\"on disk\",\"disk MiB\",\"waiting\"],\"rows\":[[";
  core::append_json_string(out, ratio);
  for (uint64_t v : {at(metrics::CacheResult::HIT), at(metrics::CacheResult::COLLAPSED),
                     at(metrics::CacheResult::STALE), at(metrics::CacheResult::REVALIDATED),
                     at(metrics::CacheResult::MISS) + at(metrics::CacheResult::BYPASS),
                     static_cast<uint64_t>(std::max<int64_t>(0, objects))})
    out += "," + std::to_string(v);
  for (int64_t v : {std::max<int64_t>(0, bytes) >> 20, std::max<int64_t>(0, disk_objects),
                    std::max<int64_t>(0, disk_bytes) >> 20, std::max<int64_t>(0, waiting)})
    out += "," + std::to_string(v);
  out += "]]}";
}

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
  core::append_json_string(out, PORTICO_VERSION_STRING);
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
    core::append_json_string(out, c.name);
    out += ",\"max_connections\":" + std::to_string(c.max_connections);
    out += ",\"endpoints\":[";
    auto outliers = c.outlier.enabled ? metrics::find_outlier_counters(c.name) : nullptr;
    for (size_t e = 0; e < c.endpoints.size(); ++e) {
      metrics::EndpointTotals t = metrics::endpoint_totals(shards, i, e);
      out += e ? ",{\"address\":" : "{\"address\":";
      core::append_json_string(out, c.endpoints[e]);
      out += t.up() ? ",\"health\":\"up\"" : ",\"health\":\"down\"";
      if (outliers && e < outliers->endpoints.size())
        out += outliers->ejected(e, now) ? ",\"ejected\":true" : ",\"ejected\":false";
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

bool AdminHandler::refuse(server::Exchange& ex) {
  sockaddr_storage peer, local;
  ex.socket_addresses(peer, local);
  const http::RequestHead& req = ex.request();
  auto refused = admin_refusal(
      cfg_->admin, admin_peer(peer, ex.listener_index() == kControlSocketListener), req);
  if (!refused)
    return false;
  metrics::admin_refusals().count(*refused);
  const char* why = metrics::kAdminRefusals[static_cast<size_t>(*refused)];
  std::string_view path = req.path(), client = ex.client_address();
  core::log::write_about(core::log::Level::WARN, core::log::Kind::ADMIN_REFUSED, why,
                         "admin: refused %.*s %.*s from %.*s: %s",
                         static_cast<int>(req.method.size()), req.method.data(),
                         static_cast<int>(path.size()), path.data(),
                         static_cast<int>(client.size()), client.data(), why);
  ex.respond(403, "text/plain", refusal_text(*refused));
  return true;
}

void AdminHandler::on_request(server::Exchange& ex) {
  std::string_view path = ex.request().path();
  double now = ev_time();
  if (changes_state(path) && refuse(ex))
    return;
  if (path == "/cache/purge") {
    if (ex.request().method != "POST")
      ex.respond(405, "text/plain", "POST /cache/purge?url=URL[&prefix=1]\n");
    else
      purges_.start(ex);
  } else if (ex.request().method != "GET" && ex.request().method != "HEAD") {
    ex.respond(405, "text/plain", "GET or HEAD\n");
  } else if (path == "/metrics") {
    std::vector<const metrics::WorkerMetrics*> shards;
    std::vector<const server::ServerStats*> servers;
    for (const auto& w : workers_) {
      shards.push_back(&w->metrics());
      servers.push_back(&w->server_stats());
    }
    std::string body = metrics::expose(*cfg_, shards, servers, now - started_at_);
    server::respond_streamed(ex, 200, "text/plain; version=0.0.4; charset=utf-8", std::move(body));
  } else if (path == "/healthz") {
    ex.respond(200, "text/plain", "ok\n");
  } else if (path == "/readyz") {
    if (draining_)
      ex.respond(503, "text/plain", "draining\n");
    else
      ex.respond(200, "text/plain", "ready\n");
  } else if (path == "/status") {
    server::respond_streamed(ex, 200, "application/json", status_json(now));
  } else if (path == "/" || path == "/dashboard") {
    ex.respond(200, "text/html; charset=utf-8", metrics::dashboard_page());
  } else if (path == "/stats.json") {
    std::string_view since = http::query_param(ex.request().query(), "since");
    server::respond_streamed(
        ex, 200, "application/json",
        stats_json(now, std::strtoull(std::string(since).c_str(), nullptr, 10)));
  } else {
    ex.respond(404, "text/plain",
               "not found: try /, /stats.json, /metrics, /healthz, /readyz, /status, "
               "POST /cache/purge\n");
  }
}

} // namespace portico::proxy
