#include "metrics/exposition.h"

#include "core/block_pool.h"
#include "metrics/admin_refusals.h"
#include "metrics/cluster_policy_exposition.h"
#include "metrics/limit_counters.h"
#include "metrics/limit_exposition.h"
#include "metrics/metric_family.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <ev.h>
#include <map>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <span>
#include <sys/resource.h>
#include <sys/time.h>
#include <tuple>
#include <unistd.h>

namespace portico::metrics {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Merges the workers' shards of one histogram.
ClientMetric histogram_metric(std::vector<ClientMetric::Label> labels,
                              const std::vector<const Histogram*>& parts) {
  std::vector<uint64_t> buckets;
  uint64_t count = 0;
  double sum = 0;
  for (const Histogram* h : parts)
    h->add_to(buckets, count, sum);
  return metrics::histogram_metric(std::move(labels), parts.front()->bounds(), buckets, sum);
}

// A gauge kept as two counters (opened, closed): what is open now. A scrape reads them one
// after the other while the workers count on, so it may see more closed than opened: never
// below 0.
double open_now(uint64_t opened, uint64_t closed) {
  return static_cast<double>(opened - std::min(opened, closed));
}

ClientMetric value_metric(double v, bool counter) {
  ClientMetric m;
  if (counter)
    m.counter.value = v;
  else
    m.gauge.value = v;
  return m;
}

// The process as Prometheus' client libraries report it (process_* names), from /proc.
void append_process_metrics(std::vector<MetricFamily>& out, double start_time) {
  double cpu = 0, rss = 0;
  if (FILE* f = std::fopen("/proc/self/stat", "r")) {
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    // Fields after the command name, which may hold spaces: skip past its closing ')'.
    if (const char* p = std::strrchr(buf, ')')) {
      unsigned long utime = 0, stime = 0;
      long rss_pages = 0;
      if (std::sscanf(p + 2,
                      "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d "
                      "%*d %*u %*u %ld",
                      &utime, &stime, &rss_pages) == 3) {
        double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
        cpu = static_cast<double>(utime + stime) / tick;
        rss = static_cast<double>(rss_pages) * static_cast<double>(sysconf(_SC_PAGESIZE));
      }
    }
  }
  double fds = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d))
      fds += e->d_name[0] != '.';
    closedir(d);
    fds -= 1; // the directory's own descriptor
  }
  auto c = family("process_cpu_seconds_total", "User and system CPU time of the process.",
                  MetricType::Counter);
  c.metric.push_back(value_metric(cpu, true));
  out.push_back(std::move(c));
  auto r =
      family("process_resident_memory_bytes", "Resident memory of the process.", MetricType::Gauge);
  r.metric.push_back(value_metric(rss, false));
  out.push_back(std::move(r));
  auto o = family("process_open_fds", "Open file descriptors of the process.", MetricType::Gauge);
  o.metric.push_back(value_metric(fds, false));
  out.push_back(std::move(o));
  rlimit nofile{};
  double max_fds = ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
                       ? static_cast<double>(nofile.rlim_cur)
                       : 0;
  auto m = family("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge);
  m.metric.push_back(value_metric(max_fds, false));
  out.push_back(std::move(m));
  auto st = family("process_start_time_seconds", "Start time of the process since the epoch.",
                   MetricType::Gauge);
  st.metric.push_back(value_metric(start_time, false));
  out.push_back(std::move(st));
}

// portico_requests_total, the request durations and body bytes, by route.
void append_route_metrics(std::vector<MetricFamily>& out, const config::Config& cfg,
                          const std::vector<const WorkerMetrics*>& shards) {
  auto requests =
      family("portico_requests_total",
             "Requests answered, by listener, client protocol, route, cluster, status code and who "
             "answered (upstream, proxy, none: the client left first, code 499).",
             MetricType::Counter);
  auto duration =
      family("portico_request_duration_seconds",
             "Client's view of a request: first byte in to last byte out.", MetricType::Histogram);
  auto bytes_in = family("portico_request_body_received_bytes_total",
                         "Request body bytes received from clients.", MetricType::Counter);
  auto bytes_out = family("portico_response_body_sent_bytes_total",
                          "Response body bytes sent to clients.", MetricType::Counter);
  size_t routes = shards.empty() ? 0 : shards.front()->route_count();
  for (size_t r = 0; r < routes && r < cfg.route_stats.size(); ++r) {
    const std::string& route = cfg.route_stats[r].label;
    const std::string& cluster = cfg.route_stats[r].cluster;
    // Summed over the shards by (listener, protocol, code, answered_by); ordered for stable
    // output.
    std::map<std::tuple<uint16_t, uint8_t, int, uint8_t>, uint64_t> counts;
    uint64_t other = 0;
    for (const auto* s : shards) {
      s->route(r).requests.for_each(
          [&](uint16_t listener, Protocol p, int code, AnsweredBy by, uint64_t n) {
            counts[{listener, static_cast<uint8_t>(p), code, static_cast<uint8_t>(by)}] += n;
          });
      other += s->route(r).requests.overflow();
    }
    for (const auto& [k, n] : counts) {
      auto [listener, p, code, by] = k;
      ClientMetric m;
      m.label = {{"listener", listener < cfg.listeners.size() ? cfg.listeners[listener].address.text
                                                              : std::string("?")},
                 {"protocol", to_string(static_cast<Protocol>(p))},
                 {"route", route},
                 {"cluster", cluster},
                 {"code", code ? std::to_string(code) : std::string("other")},
                 {"answered_by", to_string(static_cast<AnsweredBy>(by))}};
      m.counter.value = static_cast<double>(n);
      requests.metric.push_back(std::move(m));
    }
    if (other > 0) { // more distinct combinations than a route's table holds
      ClientMetric m;
      m.label = {{"listener", "other"}, {"protocol", "other"}, {"route", route},
                 {"cluster", cluster},  {"code", "other"},     {"answered_by", "other"}};
      m.counter.value = static_cast<double>(other);
      requests.metric.push_back(std::move(m));
    }
    std::vector<const Histogram*> parts;
    uint64_t in = 0, sent = 0;
    for (const auto* s : shards) {
      parts.push_back(&s->route(r).duration);
      in += s->route(r).bytes_received.get();
      sent += s->route(r).bytes_sent.get();
    }
    duration.metric.push_back(histogram_metric({{"route", route}, {"cluster", cluster}}, parts));
    ClientMetric mi, mo;
    mi.label = mo.label = {{"route", route}, {"cluster", cluster}};
    mi.counter.value = static_cast<double>(in);
    mo.counter.value = static_cast<double>(sent);
    bytes_in.metric.push_back(std::move(mi));
    bytes_out.metric.push_back(std::move(mo));
  }
  out.push_back(std::move(requests));
  if (cfg.metrics.enabled)
    out.push_back(std::move(duration));
  out.push_back(std::move(bytes_in));
  out.push_back(std::move(bytes_out));
}

// The upstream phase histograms, errors and retries, by cluster.
void append_cluster_metrics(std::vector<MetricFamily>& out, const config::Config& cfg,
                            const std::vector<const WorkerMetrics*>& shards) {
  struct Phase {
    const char* name;
    const char* help;
    const Histogram ClusterMetrics::*member;
  };
  static const Phase kPhases[] = {
      {"portico_upstream_queue_wait_seconds",
       "Time a request waited in the proxy for an upstream connection.",
       &ClusterMetrics::queue_wait},
      {"portico_upstream_connect_seconds", "Time to establish a new upstream connection.",
       &ClusterMetrics::connect},
      {"portico_upstream_first_byte_seconds",
       "Request handed to the upstream connection to the response head.",
       &ClusterMetrics::first_byte},
      {"portico_upstream_duration_seconds",
       "Request handed to the upstream connection to the response's last byte.",
       &ClusterMetrics::upstream},
  };
  size_t clusters = shards.empty() ? 0 : shards.front()->cluster_count();
  for (const Phase& ph : kPhases) {
    if (!cfg.metrics.enabled)
      break;
    auto f = family(ph.name, ph.help, MetricType::Histogram);
    for (size_t c = 0; c < clusters; ++c) {
      std::vector<const Histogram*> parts;
      for (const auto* s : shards)
        parts.push_back(&(s->cluster(c).*ph.member));
      f.metric.push_back(histogram_metric({{"cluster", cfg.clusters[c].name}}, parts));
    }
    out.push_back(std::move(f));
  }
  // A counter per cluster and per name of a fixed list, summed over the shards.
  auto by_cluster = [&](const char* name, const char* help, const char* label,
                        std::span<const char* const> names, auto member) {
    auto f = family(name, help, MetricType::Counter);
    for (size_t c = 0; c < clusters; ++c)
      for (size_t k = 0; k < names.size(); ++k) {
        uint64_t n = 0;
        for (const auto* s : shards)
          n += (s->cluster(c).*member)[k].get();
        ClientMetric m;
        m.label = {{"cluster", cfg.clusters[c].name}, {label, names[k]}};
        m.counter.value = static_cast<double>(n);
        f.metric.push_back(std::move(m));
      }
    out.push_back(std::move(f));
  };
  by_cluster("portico_upstream_errors_total",
             "Upstream failures by kind; retried counts requests sent again.", "kind",
             kErrorKindNames, &ClusterMetrics::errors);
  by_cluster("portico_upstream_retries_total",
             "Requests sent upstream again, by why that was safe.", "reason", kRetryReasons,
             &ClusterMetrics::retries);
  by_cluster("portico_upstream_hedges_total",
             "Hedged tries ([[cluster]] hedge), by what became of them.", "outcome", kHedgeOutcomes,
             &ClusterMetrics::hedges);
  by_cluster("portico_upstream_mirrored_total",
             "Copies of requests a route mirrored to this cluster, by what became of them.",
             "outcome", kMirrorOutcomes, &ClusterMetrics::mirrored);
}

// The pools' gauges, by endpoint.
void append_endpoint_metrics(std::vector<MetricFamily>& out, const config::Config& cfg,
                             const std::vector<const WorkerMetrics*>& shards) {
  size_t clusters = shards.empty() ? 0 : shards.front()->cluster_count();
  auto conns_up =
      family("portico_upstream_connections",
             "Upstream connections per endpoint: idle in the pool, or busy.", MetricType::Gauge);
  auto queue =
      family("portico_upstream_queue_depth",
             "Requests waiting in the proxy for a connection to the endpoint.", MetricType::Gauge);
  auto up = family("portico_upstream_endpoint_up",
                   "1 while every worker's last connect to the endpoint succeeded; 0 once one "
                   "failed (the endpoint is passed over for fail_timeout).",
                   MetricType::Gauge);
  auto failing = family("portico_upstream_endpoint_unhealthy",
                        "Addresses of the endpoint failing their active health check, summed "
                        "over the workers (clusters with health_check).",
                        MetricType::Gauge);
  for (size_t c = 0; c < clusters; ++c)
    for (size_t e = 0; e < cfg.clusters[c].endpoints.size(); ++e) {
      EndpointTotals t = endpoint_totals(shards, c, e);
      if (cfg.clusters[c].health_check.enabled) {
        ClientMetric h;
        h.label = {{"cluster", cfg.clusters[c].name}, {"endpoint", cfg.clusters[c].endpoints[e]}};
        h.gauge.value = static_cast<double>(t.unhealthy);
        failing.metric.push_back(std::move(h));
      }
      int64_t idle = t.idle, busy = t.busy, waiting = t.waiting;
      const std::string& cl = cfg.clusters[c].name;
      const std::string& ep = cfg.clusters[c].endpoints[e];
      for (auto [state, v] : {std::pair{"idle", idle}, std::pair{"busy", busy}}) {
        ClientMetric m;
        m.label = {{"cluster", cl}, {"endpoint", ep}, {"state", state}};
        m.gauge.value = static_cast<double>(v);
        conns_up.metric.push_back(std::move(m));
      }
      ClientMetric q;
      q.label = {{"cluster", cl}, {"endpoint", ep}};
      q.gauge.value = static_cast<double>(waiting);
      queue.metric.push_back(std::move(q));
      ClientMetric u;
      u.label = {{"cluster", cl}, {"endpoint", ep}};
      u.gauge.value = t.up() ? 1 : 0;
      up.metric.push_back(std::move(u));
    }
  out.push_back(std::move(conns_up));
  out.push_back(std::move(queue));
  out.push_back(std::move(up));
  out.push_back(std::move(failing));
}

// The client side: connections, streams, timeouts (with the upstream ones), GOAWAYs, buffers,
// TLS.
void append_server_metrics(std::vector<MetricFamily>& out,
                           const std::vector<const WorkerMetrics*>& shards,
                           const std::vector<const ServerStats*>& servers) {
  size_t clusters = shards.empty() ? 0 : shards.front()->cluster_count();
  auto conns = family("portico_client_connections",
                      "Client connections open, by protocol and TLS, once the protocol is known.",
                      MetricType::Gauge);
  for (int p = 0; p < 2; ++p)
    for (int t = 0; t < 2; ++t) {
      uint64_t opened = 0, closed = 0;
      for (const auto* s : servers) {
        opened += s->sessions_opened[p][t].get();
        closed += s->sessions_closed[p][t].get();
      }
      ClientMetric m;
      m.label = {{"protocol", p ? "h2" : "h1"}, {"tls", t ? "true" : "false"}};
      m.gauge.value = open_now(opened, closed);
      conns.metric.push_back(std::move(m));
    }
  out.push_back(std::move(conns));

  uint64_t accepted = 0;
  for (const auto* s : servers)
    accepted += s->connections_accepted.get();
  auto acc = family("portico_client_connections_accepted_total",
                    "Client connections accepted, on every listener.", MetricType::Counter);
  acc.metric.push_back(value_metric(static_cast<double>(accepted), true));
  out.push_back(std::move(acc));

  uint64_t streams_opened = 0, streams_closed = 0, hs_ok = 0, hs_failed = 0;
  uint64_t dormant_entered = 0, dormant_left = 0, tls_rested = 0, tls_woke = 0;
  for (const auto* s : servers) {
    tls_rested += s->tls_rested.get();
    tls_woke += s->tls_woke.get();
    streams_opened += s->h2_streams_opened.get();
    streams_closed += s->h2_streams_closed.get();
    dormant_entered += s->h2_dormant_entered.get();
    dormant_left += s->h2_dormant_left.get();
    hs_ok += s->tls_handshakes.get();
    hs_failed += s->tls_handshake_failures.get();
  }
  // A counter per name of a fixed list, summed over the servers (the worker threads).
  auto by_server = [&](const char* name, const char* help, const char* label,
                       std::span<const char* const> names, auto member) {
    auto f = family(name, help, MetricType::Counter);
    for (size_t k = 0; k < names.size(); ++k) {
      uint64_t n = 0;
      for (const auto* s : servers)
        n += (s->*member)[k].get();
      ClientMetric m = value_metric(static_cast<double>(n), true);
      m.label = {{label, names[k]}};
      f.metric.push_back(std::move(m));
    }
    return f;
  };
  // Every timeout in one family: the client side's from the servers, the upstream side's
  // summed over clusters from the error kinds that are timeouts.
  auto timeouts = by_server("portico_timeouts_total",
                            "Timeouts that cut a client or an upstream exchange short, by kind.",
                            "kind", kClientTimeoutKinds, &ServerStats::timeouts);
  for (auto [kind, error] : {std::pair{"upstream_connect", ErrorKind::CONNECT_TIMEOUT},
                             std::pair{"upstream_response", ErrorKind::RESPONSE_TIMEOUT},
                             std::pair{"upstream_send", ErrorKind::SEND_TIMEOUT},
                             std::pair{"upstream_queue", ErrorKind::QUEUE_TIMEOUT},
                             std::pair{"upstream_per_try", ErrorKind::PER_TRY_TIMEOUT}}) {
    uint64_t n = 0;
    for (const auto* s : shards)
      for (size_t c = 0; c < clusters; ++c)
        n += s->cluster(c).errors[error].get();
    ClientMetric m = value_metric(static_cast<double>(n), true);
    m.label = {{"kind", kind}};
    timeouts.metric.push_back(std::move(m));
  }
  out.push_back(std::move(timeouts));

  auto goaways = by_server("portico_h2_goaways_sent_total",
                           "HTTP/2 GOAWAY frames sent to clients, by error code.", "reason",
                           kGoawayReasons, &ServerStats::h2_goaways);
  out.push_back(std::move(goaways));

  auto buffers = family("portico_buffer_bytes",
                        "Memory in I/O buffers (request and response bytes on their way) and "
                        "compressors, all worker threads together.",
                        MetricType::Gauge);
  auto aborts = family("portico_buffer_limit_exceeded_total",
                       "Responses cut because one connection or stream held more than "
                       "max_buffered_response_bytes.",
                       MetricType::Counter);
  auto sendfile = family("portico_sendfile_bytes_total",
                         "Response body bytes the kernel sent from files (sendfile), which never "
                         "passed through the process: static files on cleartext HTTP/1.1.",
                         MetricType::Counter);
  int64_t blocks = 0;
  uint64_t cut = 0, sent = 0;
  for (const auto* s : servers) {
    blocks += s->buffer_blocks.load(std::memory_order_relaxed);
    cut += s->buffer_limit_aborts.get();
    sent += s->sendfile_bytes.get();
  }
  buffers.metric.push_back(
      value_metric(static_cast<double>(std::max<int64_t>(0, blocks)) * sizeof(core::Block), false));
  aborts.metric.push_back(value_metric(static_cast<double>(cut), true));
  out.push_back(std::move(buffers));
  out.push_back(std::move(aborts));
  sendfile.metric.push_back(value_metric(static_cast<double>(sent), true));
  out.push_back(std::move(sendfile));

  uint64_t quic_opened = 0, quic_closed = 0, quic_retries = 0, quic_refused = 0;
  for (const auto* s : servers) {
    quic_opened += s->quic_opened.get();
    quic_closed += s->quic_closed.get();
    quic_retries += s->quic_retries.get();
    quic_refused += s->quic_refused.get();
  }
  auto quic_open =
      family("portico_quic_connections",
             "QUIC (HTTP/3) client connections open, handshakes included.", MetricType::Gauge);
  quic_open.metric.push_back(value_metric(
      static_cast<double>(quic_opened >= quic_closed ? quic_opened - quic_closed : 0), false));
  out.push_back(std::move(quic_open));
  auto retries = family("portico_quic_retries_total",
                        "Retry packets sent: a client proves its address before any handshake "
                        "work (more than retry_above_handshakes handshakes in progress).",
                        MetricType::Counter);
  retries.metric.push_back(value_metric(static_cast<double>(quic_retries), true));
  out.push_back(std::move(retries));
  auto refused = family("portico_quic_refused_total",
                        "QUIC connections not made: a client's first packet dropped at the "
                        "listener's quic max_connections, or while draining.",
                        MetricType::Counter);
  refused.metric.push_back(value_metric(static_cast<double>(quic_refused), true));
  out.push_back(std::move(refused));

  auto rejected = by_server("portico_client_connections_rejected_total",
                            "Times accepting client connections paused: at max_connections, or "
                            "out of file descriptors or memory (then with a backoff).",
                            "reason", kClientRejections, &ServerStats::rejected);
  out.push_back(std::move(rejected));

  auto streams =
      family("portico_h2_streams_active", "HTTP/2 client streams open.", MetricType::Gauge);
  streams.metric.push_back(value_metric(open_now(streams_opened, streams_closed), false));
  out.push_back(std::move(streams));
  auto dormant = family("portico_h2_dormant_connections",
                        "HTTP/2 client connections without a stream yet whose session is put "
                        "away until the client speaks again.",
                        MetricType::Gauge);
  dormant.metric.push_back(value_metric(open_now(dormant_entered, dormant_left), false));
  out.push_back(std::move(dormant));
  auto resting = family("portico_tls_resting_connections",
                        "TLS client connections quiet for a second or more whose record buffers "
                        "are given back until the next byte.",
                        MetricType::Gauge);
  resting.metric.push_back(value_metric(open_now(tls_rested, tls_woke), false));
  out.push_back(std::move(resting));
  auto tls = family("portico_tls_handshakes_total", "TLS handshakes with clients, by result.",
                    MetricType::Counter);
  for (auto [result, v] : {std::pair{"ok", hs_ok}, std::pair{"failed", hs_failed}}) {
    ClientMetric m = value_metric(static_cast<double>(v), true);
    m.label = {{"result", result}};
    tls.metric.push_back(std::move(m));
  }
  out.push_back(std::move(tls));
}

// The process, its uptime and version.
void append_identity(std::vector<MetricFamily>& out, double uptime_seconds) {
  timeval now{};
  ::gettimeofday(&now, nullptr);
  append_process_metrics(out, static_cast<double>(now.tv_sec) + now.tv_usec / 1e6 - uptime_seconds);

  auto uptime =
      family("portico_uptime_seconds", "Seconds since portico started.", MetricType::Gauge);
  ClientMetric um;
  um.gauge.value = uptime_seconds;
  uptime.metric.push_back(std::move(um));
  out.push_back(std::move(uptime));

  auto info = family("portico_build_info", "Portico's version.", MetricType::Gauge);
  ClientMetric im;
  im.label = {{"version", PORTICO_VERSION_STRING}};
  im.gauge.value = 1;
  info.metric.push_back(std::move(im));
  out.push_back(std::move(info));
}

// The compress filter's responses and bytes, by coding.
void append_compression_metrics(std::vector<MetricFamily>& out,
                                const std::vector<const WorkerMetrics*>& shards) {
  auto by_encoding = [&](MetricFamily& f,
                         const Counter(CompressionMetrics::*member)[kEncodingCount],
                         std::vector<ClientMetric::Label> extra) {
    for (size_t e = 0; e < kEncodingCount; ++e) {
      uint64_t n = 0;
      for (const auto* s : shards)
        n += (s->compression().*member)[e].get();
      ClientMetric m;
      m.label = {{"encoding", kEncodings[e]}};
      m.label.insert(m.label.end(), extra.begin(), extra.end());
      m.counter.value = static_cast<double>(n);
      f.metric.push_back(std::move(m));
    }
  };
  auto responses =
      family("portico_compressed_responses_total",
             "Responses the proxy compressed, by content coding.", MetricType::Counter);
  by_encoding(responses, &CompressionMetrics::responses, {});
  auto bytes = family("portico_compression_bytes_total",
                      "Body bytes of compressed responses: in, before compression; out, after.",
                      MetricType::Counter);
  by_encoding(bytes, &CompressionMetrics::bytes_in, {{"direction", "in"}});
  by_encoding(bytes, &CompressionMetrics::bytes_out, {{"direction", "out"}});
  out.push_back(std::move(responses));
  out.push_back(std::move(bytes));
}

// The cache filter's requests by result, evictions, and what its stores hold.
void append_cache_metrics(std::vector<MetricFamily>& out,
                          const std::vector<const WorkerMetrics*>& shards) {
  auto results = family("portico_cache_requests_total",
                        "Requests on caching routes, by what the cache did: hit (answered from "
                        "the store), miss (fetched), revalidated (a 304 refreshed a stored "
                        "response), stale (served stale, the origin failing), collapsed (answered "
                        "from another request's fetch), bypass (no-store requests).",
                        MetricType::Counter);
  for (size_t i = 0; i < kCacheResultCount; ++i) {
    uint64_t n = 0;
    for (const auto* s : shards)
      n += s->cache().results[i].get();
    ClientMetric m;
    m.label = {{"result", kCacheResults[i]}};
    m.counter.value = static_cast<double>(n);
    results.metric.push_back(std::move(m));
  }
  out.push_back(std::move(results));
  auto one = [&](const char* name, const char* help, MetricType type, auto get) {
    auto f = family(name, help, type);
    double v = 0;
    for (const auto* s : shards)
      v += static_cast<double>(get(s->cache()));
    ClientMetric m;
    if (type == MetricType::Counter)
      m.counter.value = v;
    else
      m.gauge.value = v;
    f.metric.push_back(std::move(m));
    out.push_back(std::move(f));
  };
  one("portico_cache_evictions_total", "Stored responses evicted to make room.",
      MetricType::Counter, [](const CacheMetrics& c) { return c.evictions.get(); });
  one("portico_cache_stored_bytes", "Bytes the caches hold, what they cost counted.",
      MetricType::Gauge, [](const CacheMetrics& c) { return c.stored_bytes.get(); });
  one("portico_cache_stored_objects", "Responses the caches hold.", MetricType::Gauge,
      [](const CacheMetrics& c) { return c.stored_objects.get(); });
  one("portico_cache_waiting", "Misses waiting on another request's fetch of their key.",
      MetricType::Gauge, [](const CacheMetrics& c) { return c.waiting.get(); });
  // A directory's store is the workers' together: counted once, not per shard.
  const auto& disk = disk_cache_levels();
  for (auto [name, help, v] :
       {std::tuple{"portico_cache_disk_bytes", "Bytes the caches' directories hold, in blocks.",
                   disk.bytes.load(std::memory_order_relaxed)},
        std::tuple{"portico_cache_disk_objects", "Responses the caches' directories hold.",
                   disk.objects.load(std::memory_order_relaxed)}}) {
    auto f = family(name, help, MetricType::Gauge);
    ClientMetric m;
    m.gauge.value = static_cast<double>(v);
    f.metric.push_back(std::move(m));
    out.push_back(std::move(f));
  }
}

} // namespace

std::string expose(const config::Config& cfg, const std::vector<const WorkerMetrics*>& shards,
                   const std::vector<const ServerStats*>& servers, double uptime_seconds) {
  std::vector<MetricFamily> out;
  append_route_metrics(out, cfg, shards);
  append_cluster_metrics(out, cfg, shards);
  append_endpoint_metrics(out, cfg, shards);
  append_compression_metrics(out, shards);
  append_cache_metrics(out, shards);
  append_limit_metrics(out);
  append_cluster_policy_metrics(out, ev_time());
  append_server_metrics(out, shards, servers);
  append_admin_metrics(out);
  append_identity(out, uptime_seconds);
  return prometheus::TextSerializer().Serialize(out);
}

} // namespace portico::metrics
