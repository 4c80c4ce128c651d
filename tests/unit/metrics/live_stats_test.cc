// The dashboard's per-second samples: differences of cumulative snapshots, a group that appears
// later starting at zero, ?since= returning only what is newer, the ring's bound, the JSON.
#include "metrics/live_stats.h"

#include <gtest/gtest.h>

#include <string>

namespace portico::metrics {
namespace {

LiveGroup group(std::string kind, std::string name, uint64_t ok, uint64_t bad,
                std::vector<uint64_t> buckets) {
  LiveGroup g;
  g.kind = std::move(kind);
  g.name = std::move(name);
  g.requests[1] = ok;
  g.requests[4] = bad;
  g.latency.push_back(std::move(buckets));
  return g;
}

std::string json(const LiveStats& s, uint64_t since) {
  std::string out = "{";
  s.append_json(out, since);
  return out + "}";
}

TEST(LiveStats, SamplesAreTheDifferencesOfSnapshots) {
  LiveStats s({"total"}, {0.001, 0.01});
  s.record(100.0, {group("route", "*/", 10, 1, {5, 5, 1})});
  EXPECT_EQ(s.seq(), 0u); // one snapshot: nothing to subtract yet
  s.record(101.0, {group("route", "*/", 25, 1, {10, 14, 2})});
  EXPECT_EQ(s.seq(), 1u);
  std::string j = json(s, 0);
  EXPECT_NE(j.find("\"phases\":[\"total\"],\"bounds\":[0.001,0.01],\"seq\":1"), std::string::npos)
      << j;
  EXPECT_NE(j.find("{\"seq\":1,\"time\":101.000,\"seconds\":1.000,\"groups\":[{\"kind\":\"route\","
                   "\"name\":\"*/\",\"requests\":{\"1xx\":0,\"2xx\":15,\"3xx\":0,\"4xx\":0,"
                   "\"5xx\":0},\"latency\":{\"total\":[5,9,1]}}]}"),
            std::string::npos)
      << j;
  // The totals are the last snapshot's cumulative counts.
  EXPECT_NE(j.find("\"totals\":[{\"kind\":\"route\",\"name\":\"*/\",\"requests\":{\"1xx\":0,"
                   "\"2xx\":25,\"3xx\":0,\"4xx\":0,\"5xx\":1}}]"),
            std::string::npos)
      << j;
}

TEST(LiveStats, SinceReturnsOnlyNewerSamples) {
  LiveStats s({"total"}, {1.0});
  for (int i = 0; i <= 5; ++i)
    s.record(100.0 + i, {group("app", "hello", 10 * i, 0, {1u * i, 0})});
  EXPECT_EQ(s.seq(), 5u);
  std::string j = json(s, 3);
  EXPECT_EQ(j.find("{\"seq\":3,"), std::string::npos) << j;
  EXPECT_NE(j.find("{\"seq\":4,"), std::string::npos) << j;
  EXPECT_NE(j.find("{\"seq\":5,"), std::string::npos) << j;
  EXPECT_NE(json(s, 5).find("\"samples\":[]"), std::string::npos);
}

TEST(LiveStats, ANewGroupStartsAtZeroAndAResetCounterIsNotNegative) {
  LiveStats s({"total"}, {1.0});
  s.record(1.0, {group("route", "a", 100, 0, {100, 0})});
  // A reload: route b is new (its counts so far are its first second's), a counted afresh.
  s.record(2.0, {group("route", "a", 7, 0, {7, 0}), group("route", "b", 3, 0, {3, 0})});
  std::string j = json(s, 0);
  EXPECT_NE(j.find("\"name\":\"a\",\"requests\":{\"1xx\":0,\"2xx\":7,"), std::string::npos) << j;
  // b's first second counts nothing (its 3 came before anyone looked): the sample leaves it
  // out, as it leaves out every group without traffic; the totals have it.
  size_t samples_end = j.find("\"totals\":");
  EXPECT_EQ(j.find("\"name\":\"b\""), j.find("\"name\":\"b\",\"requests\":{\"1xx\":0,\"2xx\":3,"))
      << j;
  EXPECT_GT(j.find("\"name\":\"b\""), samples_end) << j;
}

TEST(LiveStats, IdleGroupsTakeNoRoomInTheRing) {
  LiveStats s({"total"}, {1.0});
  auto snapshot = [](uint64_t busy) {
    std::vector<LiveGroup> g;
    for (int i = 0; i < 1000; ++i)
      g.push_back(group("route", "r" + std::to_string(i), i == 7 ? busy : 5, 0, {5, 0}));
    return g;
  };
  for (uint64_t t = 1; t <= 20; ++t)
    s.record(static_cast<double>(t), snapshot(t));
  std::string j = json(s, 0);
  std::string samples = j.substr(0, j.find("\"totals\":"));
  size_t named = 0;
  for (size_t at = samples.find("\"name\":"); at != std::string::npos;
       at = samples.find("\"name\":", at + 1))
    ++named;
  EXPECT_EQ(named, 19u) << samples.substr(0, 400); // route r7 in each second after the first
}

TEST(LiveStats, TheBusiestGroupsOfEachKindAndTheRestSummed) {
  // Ten thousand routes with traffic every second would keep ten thousand deltas a second.
  LiveStats s({"total"}, {1.0});
  auto snapshot = [](uint64_t t) {
    std::vector<LiveGroup> g;
    for (uint64_t i = 0; i < 1000; ++i)
      g.push_back(group("route", "r" + std::to_string(i), t * (i + 1), 0, {t * (i + 1), 0}));
    g.push_back(group("cluster", "app", t, 0, {t, 0}));
    return g;
  };
  s.record(1, snapshot(1));
  s.record(2, snapshot(2));
  std::string j = json(s, 0);
  std::string samples = j.substr(0, j.find("\"totals\":"));
  std::string totals = j.substr(j.find("\"totals\":"));
  for (const std::string& part : {samples, totals}) {
    size_t routes = 0;
    for (size_t at = part.find("\"kind\":\"route\""); at != std::string::npos;
         at = part.find("\"kind\":\"route\"", at + 1))
      ++routes;
    EXPECT_EQ(routes, LiveStats::kTopGroups + 1) << part.substr(0, 300);
    EXPECT_EQ(part.find("\"name\":\"r949\""), std::string::npos); // the 51st busiest
    EXPECT_NE(part.find("\"name\":\"r950\""), std::string::npos); // the 50th
    EXPECT_NE(part.find("\"kind\":\"cluster\",\"name\":\"app\""), std::string::npos);
  }
  // r0..r949 summed: 1 + 2 + ... + 950 in the second, and twice that in all.
  EXPECT_NE(samples.find("\"name\":\"(others)\",\"requests\":{\"1xx\":0,\"2xx\":451725,"),
            std::string::npos)
      << samples.substr(samples.find("(others)") - 30, 200);
  EXPECT_NE(samples.find("\"latency\":{\"total\":[451725,0]}"), std::string::npos);
  EXPECT_NE(totals.find("\"name\":\"(others)\",\"requests\":{\"1xx\":0,\"2xx\":903450,"),
            std::string::npos);
}

TEST(LiveStats, TheRingHoldsTheLastFiveMinutes) {
  LiveStats s({"total"}, {1.0});
  for (size_t i = 0; i <= LiveStats::kSeconds + 10; ++i)
    s.record(static_cast<double>(i + 1), {group("route", "*/", i, 0, {i, 0})});
  std::string j = json(s, 0);
  size_t samples = 0;
  for (size_t at = j.find("{\"seq\":"); at != std::string::npos; at = j.find("{\"seq\":", at + 1))
    ++samples;
  EXPECT_EQ(samples, LiveStats::kSeconds);
  EXPECT_EQ(j.find("{\"seq\":10,"), std::string::npos); // the oldest are gone
  EXPECT_NE(j.find("{\"seq\":11,"), std::string::npos);
  EXPECT_NE(j.find("{\"seq\":310,"), std::string::npos);
}

TEST(LiveStats, NamesAreEscaped) {
  LiveStats s({"total"}, {1.0});
  s.record(1.0, {group("route", "x\"y\\z", 0, 0, {0, 0})});
  s.record(2.0, {group("route", "x\"y\\z", 1, 0, {1, 0})});
  EXPECT_NE(json(s, 0).find("\"name\":\"x\\\"y\\\\z\""), std::string::npos) << json(s, 0);
}

} // namespace
} // namespace portico::metrics
