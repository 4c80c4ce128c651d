// expose(): the Prometheus text of two workers' shards merged, for a Config with one route and
// one cluster. Every expected line follows from exposition.cc and prometheus-cpp's
// TextSerializer (labels in the order given, le last; a histogram's _count, _sum, then its
// cumulative _bucket lines ending in le="+Inf").
#include "config/config_loader.h"
#include "core/block_pool.h"
#include "metrics/exposition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace portico::metrics {
namespace {

constexpr std::string_view kConfig = R"(
[[listener]]
address = "127.0.0.1:8080"
[[cluster]]
name = "app"
endpoints = ["127.0.0.1:9001", "127.0.0.1:9002"]
[[route]]
host = "example.com"
path_prefix = "/api/"
cluster = "app"
)";

config::Config load(std::string_view extra) {
  std::string text(kConfig);
  text += extra;
  std::vector<std::string> errors;
  auto c = config::parse_config(text, "e.toml", &errors);
  EXPECT_TRUE(c) << (errors.empty() ? "" : errors.front());
  return c ? std::move(*c) : config::Config{};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// The lines that begin with prefix, in order.
std::vector<std::string> lines_starting(const std::string& text, std::string_view prefix) {
  std::vector<std::string> out;
  for (std::string& l : lines_of(text))
    if (std::string_view(l).starts_with(prefix))
      out.push_back(std::move(l));
  return out;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const std::string& l : lines_of(text))
    if (l == line)
      return true;
  return false;
}

constexpr size_t H1 = static_cast<size_t>(Protocol::H1);
constexpr size_t H2 = static_cast<size_t>(Protocol::H2);

class ExpositionTest : public ::testing::Test {
protected:
  void SetUp() override {
    cfg_ = load("[metrics]\nbuckets = [0.001, 0.01, 0.1]\n");
    ASSERT_EQ(cfg_.routes.size(), 1u);
    ASSERT_EQ(cfg_.clusters.size(), 1u);
    a_ = std::make_unique<WorkerMetrics>(cfg_, &cfg_.metrics.buckets);
    b_ = std::make_unique<WorkerMetrics>(cfg_, &cfg_.metrics.buckets);
    shards_ = {a_.get(), b_.get()};
    servers_ = {&sa_, &sb_};
  }
  std::string expose_now() { return expose(cfg_, shards_, servers_, 12.5); }

  config::Config cfg_;
  std::unique_ptr<WorkerMetrics> a_, b_;
  ServerStats sa_, sb_;
  std::vector<const WorkerMetrics*> shards_;
  std::vector<const ServerStats*> servers_;
};

TEST_F(ExpositionTest, RouteLabels) {
  ASSERT_EQ(cfg_.route_stats.size(), 2u);
  EXPECT_EQ(cfg_.route_stats[0].label, "example.com/api/");
  EXPECT_EQ(cfg_.route_stats[1].label, "none");
  config::Config any = load("[[route]]\ncluster = \"app\"\n");
  EXPECT_EQ(any.route_stats[1].label, "*/");
}

TEST_F(ExpositionTest, RoutesPastTheSeriesLimitAreOneSeriesPerCluster) {
  config::Config many = load("[metrics]\nroute_series_limit = 1\n"
                             "[[route]]\nhost = \"x.example\"\ncluster = \"app\"\n");
  WorkerMetrics w(many, &many.metrics.buckets);
  ASSERT_EQ(w.route_count(), 2u); // both routes in one, then the unmatched requests'
  w.route(0).requests.inc(0, Protocol::H1, 200, AnsweredBy::UPSTREAM);
  std::string text = expose(many, {&w}, {&sa_}, 1);
  EXPECT_EQ(lines_starting(text, "portico_requests_total"),
            (std::vector<std::string>{"portico_requests_total{listener=\"127.0.0.1:8080\","
                                      "protocol=\"h1\",route=\"(cluster)\",cluster=\"app\","
                                      "code=\"200\",answered_by=\"upstream\"} 1"}))
      << text;
  EXPECT_EQ(lines_starting(text, "portico_request_duration_seconds_count").size(), 2u) << text;
}

TEST_F(ExpositionTest, RequestsOnlyForCombinationsThatHappened) {
  for (int i = 0; i < 3; ++i)
    a_->route(0).requests.inc(0, Protocol::H1, 200, AnsweredBy::UPSTREAM);
  for (int i = 0; i < 2; ++i)
    b_->route(0).requests.inc(0, Protocol::H1, 200, AnsweredBy::UPSTREAM);
  b_->route(0).requests.inc(0, Protocol::H2, 502, AnsweredBy::PROXY);
  b_->route(0).requests.inc(0, Protocol::H2, 502, AnsweredBy::UPSTREAM);
  a_->route(1).requests.inc(0, Protocol::H1, 404, AnsweredBy::PROXY); // no route matched
  a_->route(0).requests.inc(0, Protocol::H2C, 499, AnsweredBy::NONE); // the client left
  std::string text = expose_now();
  const std::string l = "listener=\"127.0.0.1:8080\",";
  EXPECT_EQ(lines_starting(text, "portico_requests_total"),
            (std::vector<std::string>{
                "portico_requests_total{" + l +
                    "protocol=\"h1\",route=\"example.com/api/\",cluster=\"app\",code=\"200\","
                    "answered_by=\"upstream\"} 5",
                "portico_requests_total{" + l +
                    "protocol=\"h2c\",route=\"example.com/api/\",cluster=\"app\",code=\"499\","
                    "answered_by=\"none\"} 1",
                "portico_requests_total{" + l +
                    "protocol=\"h2\",route=\"example.com/api/\",cluster=\"app\",code=\"502\","
                    "answered_by=\"upstream\"} 1",
                "portico_requests_total{" + l +
                    "protocol=\"h2\",route=\"example.com/api/\",cluster=\"app\",code=\"502\","
                    "answered_by=\"proxy\"} 1",
                "portico_requests_total{" + l +
                    "protocol=\"h1\",route=\"none\",cluster=\"none\",code=\"404\","
                    "answered_by=\"proxy\"} 1",
            }))
      << text;
  EXPECT_TRUE(has_line(text, "# TYPE portico_requests_total counter")) << text;
}

TEST_F(ExpositionTest, CombinationsPastTheTableAreCountedAsOther) {
  // 64 slots per route and worker; 70 distinct codes: six go to "other", none is lost.
  for (int code = 200; code < 270; ++code)
    a_->route(0).requests.inc(0, Protocol::H1, code, AnsweredBy::UPSTREAM);
  std::string text = expose_now();
  auto lines = lines_starting(text, "portico_requests_total");
  EXPECT_EQ(lines.size(), 65u);
  EXPECT_TRUE(has_line(text, "portico_requests_total{listener=\"other\",protocol=\"other\","
                             "route=\"example.com/api/\",cluster=\"app\",code=\"other\","
                             "answered_by=\"other\"} 6"))
      << text;
}

TEST_F(ExpositionTest, RequestDurationHistogramIsCumulativeOverShards) {
  a_->route(0).duration.observe(0.0005);
  a_->route(0).duration.observe(0.001); // at the edge: counted in le="0.001"
  b_->route(0).duration.observe(0.05);
  b_->route(0).duration.observe(2); // above every bound: only in +Inf
  std::string text = expose_now();
  EXPECT_TRUE(has_line(text, "# TYPE portico_request_duration_seconds histogram")) << text;
  const std::string labels = "route=\"example.com/api/\",cluster=\"app\"";
  EXPECT_EQ(lines_starting(text, "portico_request_duration_seconds_"),
            (std::vector<std::string>{
                "portico_request_duration_seconds_count{" + labels + "} 4",
                "portico_request_duration_seconds_sum{" + labels + "} 2.0515",
                "portico_request_duration_seconds_bucket{" + labels + ",le=\"0.001\"} 2",
                "portico_request_duration_seconds_bucket{" + labels + ",le=\"0.01\"} 2",
                "portico_request_duration_seconds_bucket{" + labels + ",le=\"0.1\"} 3",
                "portico_request_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} 4",
                "portico_request_duration_seconds_count{route=\"none\",cluster=\"none\"} 0",
                "portico_request_duration_seconds_sum{route=\"none\",cluster=\"none\"} 0",
                "portico_request_duration_seconds_bucket{route=\"none\",cluster=\"none\",le="
                "\"0.001\"} 0",
                "portico_request_duration_seconds_bucket{route=\"none\",cluster=\"none\",le="
                "\"0.01\"} 0",
                "portico_request_duration_seconds_bucket{route=\"none\",cluster=\"none\",le="
                "\"0.1\"} 0",
                "portico_request_duration_seconds_bucket{route=\"none\",cluster=\"none\",le="
                "\"+Inf\"} 0",
            }))
      << text;
}

TEST_F(ExpositionTest, BodyBytes) {
  a_->route(0).bytes_received.inc(10);
  b_->route(0).bytes_received.inc(5);
  b_->route(0).bytes_sent.inc(1000);
  std::string text = expose_now();
  EXPECT_TRUE(has_line(text, "portico_request_body_received_bytes_total{route=\"example.com/api/"
                             "\",cluster=\"app\"} 15"))
      << text;
  EXPECT_TRUE(has_line(text, "portico_response_body_sent_bytes_total{route=\"example.com/api/\","
                             "cluster=\"app\"} 1000"))
      << text;
  EXPECT_TRUE(has_line(text, "portico_response_body_sent_bytes_total{route=\"none\",cluster="
                             "\"none\"} 0"))
      << text;
}

TEST_F(ExpositionTest, UpstreamPhaseHistogramsPerCluster) {
  a_->cluster(0).connect.observe(0.002);
  b_->cluster(0).connect.observe(0.2);
  b_->cluster(0).first_byte.observe(0.01);
  std::string text = expose_now();
  EXPECT_EQ(lines_starting(text, "portico_upstream_connect_seconds_"),
            (std::vector<std::string>{
                "portico_upstream_connect_seconds_count{cluster=\"app\"} 2",
                "portico_upstream_connect_seconds_sum{cluster=\"app\"} 0.202",
                "portico_upstream_connect_seconds_bucket{cluster=\"app\",le=\"0.001\"} 0",
                "portico_upstream_connect_seconds_bucket{cluster=\"app\",le=\"0.01\"} 1",
                "portico_upstream_connect_seconds_bucket{cluster=\"app\",le=\"0.1\"} 1",
                "portico_upstream_connect_seconds_bucket{cluster=\"app\",le=\"+Inf\"} 2",
            }))
      << text;
  EXPECT_TRUE(has_line(text, "portico_upstream_first_byte_seconds_bucket{cluster=\"app\",le="
                             "\"0.01\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text, "portico_upstream_queue_wait_seconds_count{cluster=\"app\"} 0"))
      << text;
  EXPECT_TRUE(has_line(text, "# TYPE portico_upstream_duration_seconds histogram")) << text;
}

TEST_F(ExpositionTest, ErrorsRetriesAndTimeouts) {
  a_->cluster(0).errors.connect_timeout().inc(2);
  b_->cluster(0).errors.queue_timeout().inc();
  b_->cluster(0).errors.retried().inc(4);
  a_->cluster(0).retries[2].inc(); // idempotent
  sa_.count(ClientTimeout::HEADER);
  sb_.count(ClientTimeout::HEADER);
  sb_.count(ClientTimeout::IDLE);
  std::string text = expose_now();
  std::vector<std::string> errors;
  for (size_t k = 0; k < kErrorKinds; ++k) {
    auto kind = static_cast<ErrorKind>(k);
    const char* n = kind == ErrorKind::CONNECT_TIMEOUT ? "2"
                    : kind == ErrorKind::RETRIED       ? "4"
                    : kind == ErrorKind::QUEUE_TIMEOUT ? "1"
                                                       : "0";
    errors.push_back(std::string("portico_upstream_errors_total{cluster=\"app\",kind=\"") +
                     kErrorKindNames[k] + "\"} " + n);
  }
  EXPECT_EQ(lines_starting(text, "portico_upstream_errors_total"), errors) << text;
  EXPECT_EQ(lines_starting(text, "portico_upstream_retries_total"),
            (std::vector<std::string>{
                "portico_upstream_retries_total{cluster=\"app\",reason=\"connect_failed\"} 0",
                "portico_upstream_retries_total{cluster=\"app\",reason=\"refused_stream\"} 0",
                "portico_upstream_retries_total{cluster=\"app\",reason=\"idempotent\"} 1",
                "portico_upstream_retries_total{cluster=\"app\",reason=\"non_idempotent\"} 0",
            }))
      << text;
  EXPECT_EQ(lines_starting(text, "portico_timeouts_total"),
            (std::vector<std::string>{
                "portico_timeouts_total{kind=\"client_header\"} 2",
                "portico_timeouts_total{kind=\"client_idle\"} 1",
                "portico_timeouts_total{kind=\"client_send\"} 0",
                "portico_timeouts_total{kind=\"h2_stream_send\"} 0",
                "portico_timeouts_total{kind=\"upstream_connect\"} 2",
                "portico_timeouts_total{kind=\"upstream_response\"} 0",
                "portico_timeouts_total{kind=\"upstream_send\"} 0",
                "portico_timeouts_total{kind=\"upstream_queue\"} 1",
                "portico_timeouts_total{kind=\"upstream_per_try\"} 0",
            }))
      << text;
}

TEST_F(ExpositionTest, EndpointGaugesSummedOverShards) {
  a_->cluster(0).endpoints[0].idle.set(2);
  a_->cluster(0).endpoints[0].busy.set(1);
  b_->cluster(0).endpoints[0].busy.set(3);
  b_->cluster(0).endpoints[0].waiting.set(4);
  b_->cluster(0).endpoints[1].connect_failures.set(1);
  std::string text = expose_now();
  const std::string e0 = "cluster=\"app\",endpoint=\"127.0.0.1:9001\"";
  const std::string e1 = "cluster=\"app\",endpoint=\"127.0.0.1:9002\"";
  EXPECT_EQ(lines_starting(text, "portico_upstream_connections"),
            (std::vector<std::string>{
                "portico_upstream_connections{" + e0 + ",state=\"idle\"} 2",
                "portico_upstream_connections{" + e0 + ",state=\"busy\"} 4",
                "portico_upstream_connections{" + e1 + ",state=\"idle\"} 0",
                "portico_upstream_connections{" + e1 + ",state=\"busy\"} 0",
            }))
      << text;
  EXPECT_EQ(lines_starting(text, "portico_upstream_queue_depth"),
            (std::vector<std::string>{"portico_upstream_queue_depth{" + e0 + "} 4",
                                      "portico_upstream_queue_depth{" + e1 + "} 0"}))
      << text;
  EXPECT_EQ(lines_starting(text, "portico_upstream_endpoint_up"),
            (std::vector<std::string>{"portico_upstream_endpoint_up{" + e0 + "} 1",
                                      "portico_upstream_endpoint_up{" + e1 + "} 0"}))
      << text;
  EXPECT_TRUE(has_line(text, "# TYPE portico_upstream_connections gauge")) << text;
}

TEST_F(ExpositionTest, ServerSide) {
  sa_.sessions_opened[0][0].inc(5);
  sa_.sessions_closed[0][0].inc(2);
  sb_.sessions_opened[1][1].inc(1);
  sb_.sessions_closed[0][0].inc(10); // more closed than opened here: never below 0 overall
  sa_.h2_streams_opened.inc(7);
  sb_.h2_streams_closed.inc(3);
  sa_.h2_dormant_entered.inc(5);
  sb_.h2_dormant_left.inc(2);
  sa_.tls_rested.inc(6);
  sb_.tls_woke.inc(4);
  sa_.tls_handshakes.inc(4);
  sb_.tls_handshake_failures.inc(1);
  sa_.h2_goaways[3].inc(); // enhance_your_calm
  sb_.count(ClientRejection::MEMORY);
  sa_.buffer_blocks = 2;
  sb_.buffer_blocks = 1;
  sb_.buffer_limit_aborts.inc();
  std::string text = expose_now();
  EXPECT_EQ(lines_starting(text, "portico_client_connections{"),
            (std::vector<std::string>{
                "portico_client_connections{protocol=\"h1\",tls=\"false\"} 0",
                "portico_client_connections{protocol=\"h1\",tls=\"true\"} 0",
                "portico_client_connections{protocol=\"h2\",tls=\"false\"} 0",
                "portico_client_connections{protocol=\"h2\",tls=\"true\"} 1",
            }))
      << text;
  EXPECT_EQ(lines_starting(text, "portico_client_connections_rejected_total"),
            (std::vector<std::string>{
                "portico_client_connections_rejected_total{reason=\"max_connections\"} 0",
                "portico_client_connections_rejected_total{reason=\"buffer_memory\"} 1",
                "portico_client_connections_rejected_total{reason=\"out_of_resources\"} 0",
                "portico_client_connections_rejected_total{reason=\"per_client\"} 0",
            }))
      << text;
  for (const std::string& line : {
           std::string("portico_h2_streams_active 4"),
           std::string("portico_h2_dormant_connections 3"),
           std::string("portico_tls_resting_connections 2"),
           std::string("portico_tls_handshakes_total{result=\"ok\"} 4"),
           std::string("portico_tls_handshakes_total{result=\"failed\"} 1"),
           std::string("portico_h2_goaways_sent_total{reason=\"enhance_your_calm\"} 1"),
           std::string("portico_h2_goaways_sent_total{reason=\"no_error\"} 0"),
           "portico_buffer_bytes " + std::to_string(3 * sizeof(core::Block)),
           std::string("portico_buffer_limit_exceeded_total 1"),
           std::string("portico_uptime_seconds 12.5"),
           std::string("portico_build_info{version=\"") + PORTICO_VERSION_STRING + "\"} 1",
           std::string("# TYPE process_open_fds gauge"),
       })
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
}

TEST_F(ExpositionTest, MetricsOffLeavesOutHistogramsOnly) {
  cfg_ = load("[metrics]\nenabled = false\n");
  const std::vector<double> none; // what the supervisor hands the workers then
  WorkerMetrics a(cfg_, &none);
  a.route(0).requests.inc(0, Protocol::H1, 200, AnsweredBy::UPSTREAM);
  a.route(0).duration.observe(0.5);
  std::vector<const WorkerMetrics*> shards{&a};
  std::string text = expose(cfg_, shards, servers_, 1);
  EXPECT_EQ(text.find("_bucket"), std::string::npos) << text;
  EXPECT_EQ(text.find("_seconds_count"), std::string::npos) << text;
  EXPECT_EQ(text.find("portico_request_duration_seconds"), std::string::npos) << text;
  EXPECT_TRUE(has_line(text, "portico_requests_total{listener=\"127.0.0.1:8080\",protocol=\"h1\","
                             "route=\"example.com/api/\",cluster=\"app\",code=\"200\","
                             "answered_by=\"upstream\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text, "# TYPE portico_upstream_errors_total counter")) << text;
}

// A bound holds an observation of exactly its label's value: once, the log-spaced first bound
// was an ulp below 5e-05 and such an observation was counted only from the next bucket on.
TEST_F(ExpositionTest, AFirstBucketHoldsItsOwnEdge) {
  for (const char* metrics : {"", "[metrics]\nbucket_min = 50e-6\n"}) {
    cfg_ = load(metrics);
    double edge = cfg_.metrics.buckets.front();
    WorkerMetrics a(cfg_, &cfg_.metrics.buckets);
    a.route(0).duration.observe(edge);
    std::vector<const WorkerMetrics*> shards{&a};
    std::string text = expose(cfg_, shards, servers_, 1);
    char le[32];
    std::snprintf(le, sizeof le, "%g", edge);
    const std::string bucket =
        "portico_request_duration_seconds_bucket{route=\"example.com/api/\",cluster=\"app\",le=";
    EXPECT_TRUE(has_line(text, bucket + "\"" + le + "\"} 1")) << metrics << "\n" << text;
  }
}

TEST_F(ExpositionTest, EachFamilyHasHelpAndTypeOnce) {
  std::string text = expose_now();
  std::vector<std::string> types = lines_starting(text, "# TYPE ");
  std::vector<std::string> helps = lines_starting(text, "# HELP ");
  EXPECT_EQ(types.size(), helps.size());
  EXPECT_GE(types.size(), 20u);
  std::sort(types.begin(), types.end());
  EXPECT_EQ(std::adjacent_find(types.begin(), types.end()), types.end());
}

} // namespace
} // namespace portico::metrics
