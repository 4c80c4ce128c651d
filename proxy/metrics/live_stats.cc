#include "metrics/live_stats.h"

#include "core/json_escape.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

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
    for (size_t i = 0; i < groups.size(); ++i) {
      const LiveGroup& g = groups[i];
      // The same configuration lists its groups in the same order: look there first, so a
      // second's snapshot of many groups is not a search of each one.
      const LiveGroup* before =
          i < last_.size() && last_[i].kind == g.kind && last_[i].name == g.name ? &last_[i]
                                                                                 : nullptr;
      if (!before) {
        auto it = std::find_if(last_.begin(), last_.end(), [&](const LiveGroup& l) {
          return l.kind == g.kind && l.name == g.name;
        });
        before = it == last_.end() ? nullptr : &*it;
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
  for (size_t g = 0; g < last_.size(); ++g) {
    out += g ? ",{\"kind\":" : "{\"kind\":";
    core::append_json_string(out, last_[g].kind);
    out += ",\"name\":";
    core::append_json_string(out, last_[g].name);
    append_requests(out, last_[g].requests);
    out.push_back('}');
  }
  out.push_back(']');
}

} // namespace portico::metrics
