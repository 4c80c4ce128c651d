#include "metrics/live_stats.h"

#include "core/json_escape.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <unordered_map>

namespace portico::metrics {

namespace {

template <typename T> void append_array(std::string& out, const T& values) {
  out.push_back('[');
  bool first = true;
  for (auto v : values) {
    if (!first)
      out.push_back(',');
    first = false;
    out += std::to_string(v);
  }
  out.push_back(']');
}

// A counter that went down (a group counted afresh) gives its new value, not a negative one.
uint32_t since(uint64_t now, uint64_t before) {
  uint64_t d = now >= before ? now - before : now;
  return static_cast<uint32_t>(std::min<uint64_t>(d, UINT32_MAX));
}

void append_latency(std::string& out, const std::vector<std::string>& phases, const auto& latency) {
  out += ",\"latency\":{";
  bool first = true;
  for (size_t p = 0; p < phases.size() && p < latency.size(); ++p) {
    if (latency[p].empty())
      continue;
    if (!first)
      out.push_back(',');
    first = false;
    core::append_json_string(out, phases[p]);
    out.push_back(':');
    append_array(out, latency[p]);
  }
  out.push_back('}');
}

void append_requests(std::string& out, const auto& requests) {
  out += ",\"requests\":{";
  for (size_t c = 0; c < kLiveClasses; ++c) {
    if (c)
      out.push_back(',');
    core::append_json_string(out, kLiveClassNames[c]);
    out.push_back(':');
    out += std::to_string(requests[c]);
  }
  out.push_back('}');
}

uint32_t add_capped(uint32_t a, uint64_t b) {
  return static_cast<uint32_t>(std::min<uint64_t>(uint64_t{a} + b, UINT32_MAX));
}
uint64_t add_capped(uint64_t a, uint64_t b) {
  return a + b;
}

template <typename G> uint64_t weight(const G& g) {
  uint64_t n = 0;
  for (auto v : g.requests)
    n += v;
  return n;
}

// Of each kind, the `keep` groups with the most requests stay, in their order; the rest become
// one group named `others` after them, their requests and latency buckets summed.
template <typename G> void fold_quietest(std::vector<G>& groups, size_t keep, const char* others) {
  std::vector<std::string> kinds;
  for (const G& g : groups)
    if (std::find(kinds.begin(), kinds.end(), g.kind) == kinds.end())
      kinds.push_back(g.kind);
  std::vector<bool> kept(groups.size(), true);
  std::vector<G> folded;
  for (const std::string& kind : kinds) {
    std::vector<size_t> of_kind;
    for (size_t i = 0; i < groups.size(); ++i)
      if (groups[i].kind == kind)
        of_kind.push_back(i);
    if (of_kind.size() <= keep)
      continue;
    // Busiest first; among equals the one listed first, so the choice is stable.
    std::nth_element(of_kind.begin(), of_kind.begin() + static_cast<std::ptrdiff_t>(keep),
                     of_kind.end(), [&](size_t a, size_t b) {
                       uint64_t wa = weight(groups[a]), wb = weight(groups[b]);
                       return wa != wb ? wa > wb : a < b;
                     });
    G sum;
    sum.kind = kind;
    sum.name = others;
    for (size_t k = keep; k < of_kind.size(); ++k) {
      G& g = groups[of_kind[k]];
      kept[of_kind[k]] = false;
      for (size_t c = 0; c < kLiveClasses; ++c)
        sum.requests[c] = add_capped(sum.requests[c], g.requests[c]);
      sum.latency.resize(std::max(sum.latency.size(), g.latency.size()));
      for (size_t p = 0; p < g.latency.size(); ++p) {
        auto& to = sum.latency[p];
        to.resize(std::max(to.size(), g.latency[p].size()));
        for (size_t b = 0; b < g.latency[p].size(); ++b)
          to[b] = add_capped(to[b], g.latency[p][b]);
      }
    }
    folded.push_back(std::move(sum));
  }
  if (folded.empty())
    return;
  size_t out = 0;
  for (size_t i = 0; i < groups.size(); ++i)
    if (kept[i])
      groups[out++] = std::move(groups[i]);
  groups.resize(out);
  for (G& g : folded)
    groups.push_back(std::move(g));
}

} // namespace

LiveStats::LiveStats(std::vector<std::string> phases, std::vector<double> bounds)
    : phases_(std::move(phases)), bounds_(std::move(bounds)) {
  ring_.reserve(kSeconds);
}

void LiveStats::record(double now, std::vector<LiveGroup> groups) {
  if (last_time_ > 0 && now > last_time_) {
    Sample s;
    s.seq = ++seq_;
    s.time = now;
    s.seconds = now - last_time_;
    std::unordered_map<std::string, const LiveGroup*> by_name;
    for (size_t i = 0; i < groups.size(); ++i) {
      const LiveGroup& g = groups[i];
      // The same configuration lists its groups in the same order: look there first, so a
      // second's snapshot of many groups is not a search of each one.
      const LiveGroup* before =
          i < last_.size() && last_[i].kind == g.kind && last_[i].name == g.name ? &last_[i]
                                                                                 : nullptr;
      if (!before) { // a reload changed the list: by name, through a map made once
        if (by_name.empty())
          for (const LiveGroup& l : last_)
            by_name.emplace(l.kind + '\0' + l.name, &l);
        auto it = by_name.find(g.kind + '\0' + g.name);
        before = it == by_name.end() ? nullptr : it->second;
      }
      Delta d;
      bool moved = false;
      for (size_t c = 0; c < kLiveClasses; ++c) {
        d.requests[c] = since(g.requests[c], before ? before->requests[c] : g.requests[c]);
        moved |= d.requests[c] != 0;
      }
      d.latency.resize(g.latency.size());
      for (size_t p = 0; p < g.latency.size(); ++p) {
        const auto& now_b = g.latency[p];
        d.latency[p].resize(now_b.size());
        for (size_t b = 0; b < now_b.size(); ++b) {
          uint64_t was = now_b[b];
          if (before && p < before->latency.size() && b < before->latency[p].size())
            was = before->latency[p][b];
          d.latency[p][b] = since(now_b[b], was);
          moved |= d.latency[p][b] != 0;
        }
      }
      // A sample holds only the groups that had traffic in its second: the history of ten
      // thousand idle routes costs nothing, and a reader takes a missing group for zero.
      if (!moved)
        continue;
      d.kind = g.kind;
      d.name = g.name;
      s.groups.push_back(std::move(d));
    }
    fold_quietest(s.groups, kTopGroups, kOthers);
    if (ring_.size() < kSeconds) {
      ring_.push_back(std::move(s));
    } else {
      ring_[next_] = std::move(s);
      next_ = (next_ + 1) % kSeconds;
    }
  }
  last_time_ = now;
  last_ = std::move(groups);
}

void LiveStats::append_json(std::string& out, uint64_t since_seq) const {
  out += "\"phases\":[";
  for (size_t p = 0; p < phases_.size(); ++p) {
    if (p)
      out.push_back(',');
    core::append_json_string(out, phases_[p]);
  }
  out += "],\"bounds\":[";
  char num[32];
  for (size_t b = 0; b < bounds_.size(); ++b) {
    std::snprintf(num, sizeof num, "%s%.9g", b ? "," : "", bounds_[b]);
    out += num;
  }
  out += "],\"seq\":" + std::to_string(seq_) + ",\"samples\":[";
  bool first_sample = true;
  for (size_t i = 0; i < ring_.size(); ++i) {
    const Sample& s = ring_[(next_ + i) % ring_.size()];
    if (s.seq <= since_seq)
      continue;
    if (!first_sample)
      out.push_back(',');
    first_sample = false;
    std::snprintf(num, sizeof num, "%.3f", s.time);
    out += "{\"seq\":" + std::to_string(s.seq) + ",\"time\":" + num;
    std::snprintf(num, sizeof num, "%.3f", s.seconds);
    out += ",\"seconds\":";
    out += num;
    out += ",\"groups\":[";
    for (size_t g = 0; g < s.groups.size(); ++g) {
      out += g ? ",{\"kind\":" : "{\"kind\":";
      core::append_json_string(out, s.groups[g].kind);
      out += ",\"name\":";
      core::append_json_string(out, s.groups[g].name);
      append_requests(out, s.groups[g].requests);
      append_latency(out, phases_, s.groups[g].latency);
      out.push_back('}');
    }
    out += "]}";
  }
  out += "],\"totals\":[";
  std::vector<LiveGroup> totals;
  totals.reserve(last_.size());
  for (const LiveGroup& g : last_)
    totals.push_back({g.kind, g.name, g.requests, {}});
  fold_quietest(totals, kTopGroups, kOthers);
  for (size_t g = 0; g < totals.size(); ++g) {
    out += g ? ",{\"kind\":" : "{\"kind\":";
    core::append_json_string(out, totals[g].kind);
    out += ",\"name\":";
    core::append_json_string(out, totals[g].name);
    append_requests(out, totals[g].requests);
    out.push_back('}');
  }
  out.push_back(']');
}

} // namespace portico::metrics
