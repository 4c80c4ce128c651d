// WorkerMetrics: one worker's shard, shaped by the configuration (a route slot per route plus
// one for unmatched requests, a cluster slot per cluster with an endpoint slot per endpoint),
// and endpoint_totals(), which merges one endpoint's pool gauges over the shards for /status
// and /metrics.
#include "config/config_loader.h"
#include "metrics/worker_metrics.h"
#include "upstream/upstream_error.h"

#include <gtest/gtest.h>

#include <array>
#include <string_view>

namespace portico::metrics {
namespace {

constexpr std::string_view kTwoClusters = R"(
[[listener]]
address = "127.0.0.1:8080"
[[cluster]]
name = "app"
endpoints = ["127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"]
[[cluster]]
name = "static"
endpoints = ["unix:/dev/shm/static.sock"]
[[route]]
path_prefix = "/static/"
cluster = "static"
[[route]]
cluster = "app"
)";

config::Config load(std::string_view text) {
  std::vector<std::string> errors;
  auto c = config::parse_config(text, "w.toml", &errors);
  EXPECT_TRUE(c) << (errors.empty() ? "" : errors.front());
  return c ? std::move(*c) : config::Config{};
}

TEST(WorkerMetrics, ShapedByTheConfiguration) {
  config::Config cfg = load(kTwoClusters);
  ASSERT_EQ(cfg.clusters.size(), 2u);
  const std::vector<double> bounds{0.01, 0.1};
  WorkerMetrics m(cfg, &bounds);
  EXPECT_EQ(m.route_count(), 3u); // two routes, then the one for unmatched requests
  EXPECT_EQ(m.cluster_count(), 2u);
  EXPECT_EQ(m.cluster(0).endpoints.size(), 3u);
  EXPECT_EQ(m.cluster(1).endpoints.size(), 1u);
  // Every histogram records with the bounds given (which it does not copy).
  for (size_t r = 0; r < m.route_count(); ++r)
    EXPECT_EQ(&m.route(r).duration.bounds(), &bounds);
  for (size_t c = 0; c < m.cluster_count(); ++c) {
    EXPECT_EQ(&m.cluster(c).queue_wait.bounds(), &bounds);
    EXPECT_EQ(&m.cluster(c).connect.bounds(), &bounds);
    EXPECT_EQ(&m.cluster(c).first_byte.bounds(), &bounds);
    EXPECT_EQ(&m.cluster(c).upstream.bounds(), &bounds);
  }
}

TEST(WorkerMetrics, AReloadKeepsCountingInTheSlotsOfWhatStayed) {
  config::Config old = load(kTwoClusters);
  const std::vector<double> bounds{0.01, 0.1};
  WorkerMetrics before(old, &bounds);
  before.cluster(1).errors.connect_refused().inc();
  before.route(0).bytes_sent.inc(7);
  // The next configuration keeps "static" and the first route, adds a cluster and a route.
  std::string text(kTwoClusters);
  text += "[[cluster]]\nname = \"new\"\nendpoints = [\"127.0.0.1:9009\"]\n"
          "[[route]]\npath_prefix = \"/new/\"\ncluster = \"new\"\n";
  config::Config next = load(text);
  WorkerMetrics after(next, &bounds, before, {-1, 1, -1}, {0, -1, -1, 2});
  EXPECT_EQ(&after.cluster(1), &before.cluster(1)); // the same counters, shared
  EXPECT_EQ(after.cluster(1).errors.connect_refused().get(), 1u);
  EXPECT_NE(&after.cluster(0), &before.cluster(0)); // changed: afresh
  EXPECT_EQ(&after.route(0), &before.route(0));
  EXPECT_EQ(after.route(0).bytes_sent.get(), 7u);
  EXPECT_EQ(&after.route(3), &before.route(2)); // the unmatched requests' slot
  EXPECT_EQ(after.route_count(), 4u);
}

TEST(WorkerMetrics, SlotsAreIndependent) {
  config::Config cfg = load(kTwoClusters);
  const std::vector<double> bounds{0.01};
  WorkerMetrics m(cfg, &bounds);
  for (int i = 0; i < 3; ++i)
    m.route(2).requests.inc(0, Protocol::H2, 503, AnsweredBy::PROXY);
  m.route(0).bytes_sent.inc(100);
  m.cluster(1).errors.queue_timeout().inc();
  m.cluster(0).endpoints[2].busy.set(7);
  const WorkerMetrics& cm = m;
  auto count = [](const RouteMetrics& r, Protocol p, int code) {
    uint64_t n = 0;
    r.requests.for_each([&](uint16_t, Protocol q, int c, AnsweredBy, uint64_t k) {
      n += q == p && c == code ? k : 0;
    });
    return n;
  };
  EXPECT_EQ(count(cm.route(2), Protocol::H2, 503), 3u);
  EXPECT_EQ(count(cm.route(2), Protocol::H1, 503), 0u);
  EXPECT_EQ(count(cm.route(1), Protocol::H2, 503), 0u);
  EXPECT_EQ(cm.route(0).bytes_sent.get(), 100u);
  EXPECT_EQ(cm.route(0).bytes_received.get(), 0u);
  EXPECT_EQ(cm.cluster(1).errors.queue_timeout().get(), 1u);
  EXPECT_EQ(cm.cluster(0).errors.queue_timeout().get(), 0u);
  EXPECT_EQ(cm.cluster(0).endpoints[2].busy.get(), 7);
  EXPECT_EQ(cm.cluster(0).endpoints[1].busy.get(), 0);
}

TEST(WorkerMetrics, LabelNames) {
  EXPECT_STREQ(to_string(Protocol::H1), "h1");
  EXPECT_STREQ(to_string(Protocol::H2C), "h2c");
  EXPECT_STREQ(to_string(Protocol::H2), "h2");
  // The error kinds begin with UpstreamError's values, named as it names them.
  for (size_t i = 0; i < static_cast<size_t>(ErrorKind::RETRIED); ++i)
    EXPECT_STREQ(kErrorKindNames[i], upstream::to_string(static_cast<upstream::UpstreamError>(i)))
        << i;
  EXPECT_STREQ(kErrorKindNames[static_cast<size_t>(ErrorKind::RETRIED)], "retried");
  EXPECT_STREQ(kErrorKindNames[static_cast<size_t>(ErrorKind::QUEUE_TIMEOUT)], "queue_timeout");
  EXPECT_STREQ(kErrorKindNames[static_cast<size_t>(ErrorKind::PER_TRY_TIMEOUT)], "per_try_timeout");
  EXPECT_EQ(kErrorKinds, 10u);
  EXPECT_STREQ(upstream::to_string(upstream::UpstreamError::LOCAL_RESOURCES), "local_resources");
}

class EndpointTotalsTest : public ::testing::Test {
protected:
  EndpointTotalsTest()
      : cfg_(load(kTwoClusters)), a_(cfg_, &bounds_), b_(cfg_, &bounds_), c_(cfg_, &bounds_) {}
  static void set(WorkerMetrics& m, size_t cluster, size_t endpoint, int64_t idle, int64_t busy,
                  int64_t waiting, int64_t failures) {
    EndpointGauges& g = m.cluster(cluster).endpoints[endpoint];
    g.idle.set(idle);
    g.busy.set(busy);
    g.waiting.set(waiting);
    g.connect_failures.set(failures);
  }
  const std::vector<double> bounds_{0.1};
  config::Config cfg_;
  WorkerMetrics a_, b_, c_;
  // As AdminHandler and expose() hold them: pointers to const shards.
  std::vector<const WorkerMetrics*> shards_{&a_, &b_, &c_};
};

TEST_F(EndpointTotalsTest, SumsPoolGaugesOverShards) {
  set(a_, 0, 1, 2, 3, 0, 0);
  set(b_, 0, 1, 5, 1, 4, 0);
  set(c_, 0, 1, 0, 6, 1, 0);
  // Other endpoints and the other cluster stay out of the sum.
  set(a_, 0, 0, 100, 100, 100, 0);
  set(b_, 0, 2, 100, 100, 100, 9);
  set(c_, 1, 0, 100, 100, 100, 9);
  EndpointTotals t = endpoint_totals(shards_, 0, 1);
  EXPECT_EQ(t.idle, 7);
  EXPECT_EQ(t.busy, 10);
  EXPECT_EQ(t.waiting, 5);
  EXPECT_EQ(t.connect_failures, 0);
  EXPECT_TRUE(t.up());
}

TEST_F(EndpointTotalsTest, OneWorkersFailedConnectIsEnoughForDown) {
  set(a_, 0, 0, 1, 0, 0, 0);
  set(b_, 0, 0, 0, 0, 0, 2);
  set(c_, 0, 0, 0, 0, 0, 5);
  EndpointTotals t = endpoint_totals(shards_, 0, 0);
  EXPECT_EQ(t.connect_failures, 5); // the longest run, not the sum
  EXPECT_FALSE(t.up());
  EXPECT_EQ(t.idle, 1);
  // Once every worker's last connect succeeded the endpoint is up again, whatever down_until
  // says (that only decides whether the pool tries it).
  b_.cluster(0).endpoints[0].connect_failures.set(0);
  c_.cluster(0).endpoints[0].connect_failures.set(0);
  c_.cluster(0).endpoints[0].down_until.set(1'000'000);
  EXPECT_TRUE(endpoint_totals(shards_, 0, 0).up());
}

TEST_F(EndpointTotalsTest, AnySpanOfShards) {
  set(a_, 1, 0, 1, 2, 3, 0);
  set(b_, 1, 0, 10, 20, 30, 0);
  std::array<const WorkerMetrics*, 1> one{&b_};
  EXPECT_EQ(endpoint_totals(one, 1, 0).busy, 20);
  EndpointTotals none = endpoint_totals({}, 1, 0);
  EXPECT_EQ(none.idle + none.busy + none.waiting + none.connect_failures, 0);
  EXPECT_TRUE(none.up());
  EXPECT_EQ(endpoint_totals(shards_, 1, 0).waiting, 33);
}

} // namespace
} // namespace portico::metrics
