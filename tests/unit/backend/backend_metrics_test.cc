// BackendMetrics: worker slots in shared memory, written by forked workers and summed by the
// master; a slot handed to a new worker keeps the old one's counts, so no counter goes down.
#include "backend_metrics.h"
#include "metrics_exposition.h"

#include <gtest/gtest.h>

#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace portico::backend {
namespace {

uint64_t requests(const BackendMetrics& m, App a, size_t cls) {
  return m.totals(a).requests[cls];
}

// Runs fn in a forked child, as a worker; true when it exited 0.
template <typename Fn> bool in_child(Fn fn) {
  pid_t pid = ::fork();
  if (pid == 0)
    ::_exit(fn() ? 0 : 1);
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

TEST(BackendMetrics, StatusClasses) {
  EXPECT_EQ(status_class(101), 0u);
  EXPECT_EQ(status_class(200), 1u);
  EXPECT_EQ(status_class(304), 2u);
  EXPECT_EQ(status_class(404), 3u);
  EXPECT_EQ(status_class(503), 4u);
  EXPECT_EQ(status_class(599), 4u);
  EXPECT_EQ(status_class(0), 3u); // no answer: the client went away
  EXPECT_EQ(status_class(600), 3u);
  EXPECT_EQ(status_class(-1), 3u);
}

TEST(BackendMetrics, SlotsLowestFirstAndBounded) {
  BackendMetrics m(3);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.acquire(), 0);
  EXPECT_EQ(m.acquire(), 1);
  EXPECT_EQ(m.acquire(), 2);
  EXPECT_EQ(m.acquire(), -1); // full: the master postpones the worker
  EXPECT_EQ(m.in_use(), 3u);
  m.release(1);
  EXPECT_EQ(m.in_use(), 2u);
  EXPECT_EQ(m.acquire(), 1);
  m.release(7); // out of range: ignored
  m.release(-1);
  EXPECT_EQ(m.in_use(), 3u);
}

TEST(BackendMetrics, CapacityLeavesRoomForARestart) {
  EXPECT_EQ(BackendMetrics::capacity_for(2), 256u);
  EXPECT_EQ(BackendMetrics::capacity_for(100), 400u);
}

TEST(BackendMetrics, ReusedSlotKeepsCountsSoCountersNeverGoDown) {
  BackendMetrics m(4);
  int a = m.acquire();
  int b = m.acquire();
  m.slot(a).app(App::HELLO).requests[1].inc(5);
  m.slot(b).app(App::HELLO).requests[1].inc(2);
  m.slot(b).app(App::STATUS).requests[4].inc();
  EXPECT_EQ(requests(m, App::HELLO, 1), 7u);

  // Worker a dies; the master reaps it and gives its slot to the next worker.
  m.slot(a).set_in_flight(3); // killed with requests in flight
  m.release(a);
  EXPECT_EQ(m.slot(a).in_flight(), 0);
  EXPECT_EQ(requests(m, App::HELLO, 1), 7u); // the dead worker's counts still count
  int c = m.acquire();
  EXPECT_EQ(c, a);
  m.slot(c).app(App::HELLO).requests[1].inc();
  EXPECT_EQ(requests(m, App::HELLO, 1), 8u);
  EXPECT_EQ(requests(m, App::STATUS, 4), 1u);
  EXPECT_EQ(requests(m, App::ECHO, 1), 0u);
}

TEST(BackendMetrics, HistogramSumsOverSlots) {
  BackendMetrics m(2, {0.001, 0.01, 0.1});
  int a = m.acquire();
  int b = m.acquire();
  m.slot(a).app(App::DELAY).duration.observe(0.0005);
  m.slot(a).app(App::DELAY).duration.observe(0.05);
  m.slot(b).app(App::DELAY).duration.observe(0.05);
  m.slot(b).app(App::DELAY).duration.observe(2);
  auto t = m.totals(App::DELAY);
  ASSERT_EQ(t.buckets.size(), 4u);
  EXPECT_EQ(t.buckets[0], 1u);
  EXPECT_EQ(t.buckets[1], 0u);
  EXPECT_EQ(t.buckets[2], 2u);
  EXPECT_EQ(t.buckets[3], 1u); // +Inf
  EXPECT_EQ(t.count, 4u);
  EXPECT_NEAR(t.sum, 2.1005, 1e-6);
}

TEST(BackendMetrics, ForkedWorkersWriteTheirOwnSlots) {
  BackendMetrics m(8);
  // Three generations of workers through two slots: the first in each slot is "killed"
  // (exits), its slot is released and handed to the next.
  int s0 = m.acquire();
  int s1 = m.acquire();
  auto work = [&](int slot, int n) {
    return in_child([&] {
      WorkerSlot& w = m.slot(slot);
      for (int i = 0; i < n; ++i) {
        w.set_in_flight(1);
        w.app(App::HELLO).requests[1].inc();
        w.app(App::HELLO).duration.observe(0.001);
        w.set_in_flight(0);
      }
      w.set_in_flight(1); // dies with one in flight
      return true;
    });
  };
  ASSERT_TRUE(work(s0, 1000));
  ASSERT_TRUE(work(s1, 500));
  EXPECT_EQ(requests(m, App::HELLO, 1), 1500u);
  EXPECT_EQ(m.slot(s0).in_flight(), 1);
  uint64_t before = requests(m, App::HELLO, 1);
  m.release(s0);
  EXPECT_EQ(m.slot(s0).in_flight(), 0);
  int again = m.acquire();
  ASSERT_EQ(again, s0);
  ASSERT_TRUE(work(again, 250));
  uint64_t after = requests(m, App::HELLO, 1);
  EXPECT_GE(after, before);
  EXPECT_EQ(after, 1750u);
  EXPECT_EQ(m.totals(App::HELLO).count, 1750u);
}

TEST(BackendMetrics, Exposition) {
  BackendMetrics m(4, {0.001, 0.01});
  int a = m.acquire();
  m.slot(a).app(App::HELLO).requests[1].inc(3);
  m.slot(a).app(App::NOT_FOUND).requests[3].inc();
  m.slot(a).app(App::HELLO).duration.observe(0.002);
  SupervisionStats s;
  s.workers_configured = 2;
  s.workers_busy = 1;
  s.workers_idle = 1;
  s.restarts[size_t(RestartCause::CRASH)] = 4;
  s.restarts[size_t(RestartCause::HUP)] = 2;
  std::string text = expose(m, s);
  for (const char* line : {
           "# TYPE portico_backend_requests_total counter",
           "portico_backend_requests_total{app=\"hello\",status_class=\"2xx\"} 3",
           "portico_backend_requests_total{app=\"not_found\",status_class=\"4xx\"} 1",
           "portico_backend_requests_total{app=\"echo\",status_class=\"5xx\"} 0",
           "# TYPE portico_backend_request_duration_seconds histogram",
           "portico_backend_request_duration_seconds_bucket{app=\"hello\",le=\"0.001\"} 0",
           "portico_backend_request_duration_seconds_bucket{app=\"hello\",le=\"0.01\"} 1",
           "portico_backend_request_duration_seconds_bucket{app=\"hello\",le=\"+Inf\"} 1",
           "portico_backend_request_duration_seconds_count{app=\"static\"} 0",
           "portico_backend_workers{state=\"busy\"} 1",
           "portico_backend_workers{state=\"idle\"} 1",
           "portico_backend_workers_configured 2",
           "portico_backend_worker_restarts_total{cause=\"crash\"} 4",
           "portico_backend_worker_restarts_total{cause=\"max_requests\"} 0",
           "portico_backend_worker_restarts_total{cause=\"hup\"} 2",
           "# TYPE portico_backend_build_info gauge",
           "portico_backend_slot_requests_total{slot=\"0\"} 4",
       })
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
  // No app answers 1xx: that class is left out rather than shown at 0 for every app.
  EXPECT_EQ(text.find("status_class=\"1xx\""), std::string::npos);
}

} // namespace
} // namespace portico::backend
