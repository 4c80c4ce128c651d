#pragma once
// The last minutes of a server's traffic, a second at a time, for the admin dashboard and its
// JSON (/stats.json). The admin thread takes a snapshot of the cumulative counters once a
// second (the same relaxed loads as a /metrics scrape: the data path does nothing more for it)
// and keeps each second's difference in a ring, for the groups that had any traffic in it. A reader
// asks for what came after the last second it has (?since=SEQ), so a page polling every second
// moves one sample at a time.
//
// Groups are what the numbers are about: a route, a cluster, an app. Each has requests by
// status class and latency histograms by phase ("total", "queue", ...), all with the server's
// one set of bucket bounds. A group that appears (a reload's new route) starts at zero; one
// that goes stops being reported. Of each kind, a second's sample and the totals hold the
// kTopGroups busiest groups and one "(others)" summing the rest, so that the ring and the
// JSON stay bounded however many routes and clusters the configuration has.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace portico::metrics {

inline constexpr size_t kLiveClasses = 5; // 1xx..5xx
inline constexpr const char* kLiveClassNames[kLiveClasses] = {"1xx", "2xx", "3xx", "4xx", "5xx"};

// Cumulative counts of one group, as read at one moment.
struct LiveGroup {
  std::string kind; // "route", "cluster", "app"
  std::string name;
  std::array<uint64_t, kLiveClasses> requests{};
  // Parallel to LiveStats' phases; an empty vector: this group has no such phase.
  std::vector<std::vector<uint64_t>> latency;
};

class LiveStats {
public:
  static constexpr size_t kSeconds = 300;
  static constexpr size_t kTopGroups = 50;
  static constexpr const char* kOthers = "(others)";

  // phases: the latency series' names, in the order LiveGroup::latency holds them; bounds:
  // the histograms' upper bounds in seconds (a bucket past the last one counts the rest).
  LiveStats(std::vector<std::string> phases, std::vector<double> bounds);

  // One second's snapshot (every group's cumulative counts) at unix time `now`.
  void record(double now, std::vector<LiveGroup> groups);

  // The newest sample's number (0 before the second snapshot).
  uint64_t seq() const { return seq_; }
  // Appends `"phases":...,"bounds":...,"seq":N,"samples":[...],"totals":[...]` (no braces):
  // the samples after `since`, oldest first, and every group's cumulative counts now.
  void append_json(std::string& out, uint64_t since) const;

private:
  struct Delta {
    std::string kind, name;
    std::array<uint32_t, kLiveClasses> requests{};
    std::vector<std::vector<uint32_t>> latency;
  };
  struct Sample {
    uint64_t seq = 0;
    double time = 0, seconds = 0;
    std::vector<Delta> groups;
  };

  std::vector<std::string> phases_;
  std::vector<double> bounds_;
  std::vector<Sample> ring_; // kSeconds at most, the oldest at ring_[next_] once full
  size_t next_ = 0;
  uint64_t seq_ = 0;
  double last_time_ = 0;
  std::vector<LiveGroup> last_; // the previous snapshot
};

} // namespace portico::metrics
