#include "metrics/live_groups.h"

namespace portico::metrics {

namespace {

enum Phase : size_t { TOTAL, QUEUE, CONNECT, FIRST_BYTE, PHASES };

// Status code to class index; what is no status (0: more combinations than the table holds,
// 499: the client left first) counts with the 4xx, as the backend's counter does.
size_t class_of(int code) {
  return code >= 100 && code < 600 && code != 499 ? static_cast<size_t>(code / 100 - 1) : 3;
}

std::vector<uint64_t> merged(const std::vector<const WorkerMetrics*>& shards, auto histogram_of) {
  std::vector<uint64_t> buckets;
  uint64_t count = 0;
  double sum = 0;
  for (const auto* s : shards)
    histogram_of(*s).add_to(buckets, count, sum);
  return buckets;
}

} // namespace

std::vector<std::string> live_phases() {
  return {"total", "queue", "connect", "first_byte"};
}

std::vector<LiveGroup> live_groups(const config::Config& cfg,
                                   const std::vector<const WorkerMetrics*>& shards) {
  std::vector<LiveGroup> out;
  size_t routes = shards.empty() ? 0 : shards.front()->route_count();
  size_t clusters = shards.empty() ? 0 : shards.front()->cluster_count();
  std::vector<LiveGroup> by_cluster(clusters);
  for (size_t c = 0; c < clusters; ++c) {
    LiveGroup& g = by_cluster[c];
    g.kind = "cluster";
    g.name = c < cfg.clusters.size() ? cfg.clusters[c].name : "?";
    g.latency.resize(PHASES);
    g.latency[TOTAL] = merged(
        shards, [c](const WorkerMetrics& s) -> const Histogram& { return s.cluster(c).upstream; });
    g.latency[QUEUE] = merged(shards, [c](const WorkerMetrics& s) -> const Histogram& {
      return s.cluster(c).queue_wait;
    });
    g.latency[CONNECT] = merged(
        shards, [c](const WorkerMetrics& s) -> const Histogram& { return s.cluster(c).connect; });
    g.latency[FIRST_BYTE] = merged(shards, [c](const WorkerMetrics& s) -> const Histogram& {
      return s.cluster(c).first_byte;
    });
  }
  for (size_t r = 0; r < routes && r < cfg.route_stats.size(); ++r) {
    const config::RouteStatGroup& group = cfg.route_stats[r];
    LiveGroup g;
    g.kind = "route";
    g.name = group.name;
    for (const auto* s : shards)
      s->route(r).requests.for_each([&](uint16_t, Protocol, int code, AnsweredBy, uint64_t n) {
        g.requests[class_of(code)] += n;
      });
    g.latency.resize(1);
    g.latency[TOTAL] = merged(
        shards, [r](const WorkerMetrics& s) -> const Histogram& { return s.route(r).duration; });
    if (group.cluster_index < clusters)
      for (size_t k = 0; k < kLiveClasses; ++k)
        by_cluster[group.cluster_index].requests[k] += g.requests[k];
    out.push_back(std::move(g));
  }
  for (LiveGroup& g : by_cluster)
    out.push_back(std::move(g));
  return out;
}

} // namespace portico::metrics
