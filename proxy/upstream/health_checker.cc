#include "upstream/health_checker.h"

#include "core/error_log.h"
#include "http/http1_response_parser.h"
#include "upstream/upstream_error.h"
#include "upstream/upstream_pool.h"

#include <random>

namespace portico::upstream {

HealthChecker::HealthChecker(UpstreamPool& pool, const config::HealthCheckConfig& cfg)
    : pool_(pool), cfg_(cfg) {
  const core::EndpointSpec& e = pool.endpoint();
  authority_ = !cfg.host.empty() ? cfg.host
               : e.is_unix       ? std::string("localhost")
                                 : e.host + ":" + std::to_string(e.port);
  request_.method = "GET";
  request_.scheme = pool.tls() ? "https" : "http";
  request_.authority = authority_;
  request_.target = cfg_.path;
  request_.version = http::Version::HTTP_1_1;
  fwd_.add_forwarded = false;
  fwd_.request_id_header = "";
  ev_init(&interval_, interval_cb);
  interval_.data = this;
  ev_init(&timeout_, timeout_cb);
  timeout_.data = this;
}

HealthChecker::~HealthChecker() {
  abandon();
  ev_timer_stop(pool_.loop(), &interval_);
  ev_timer_stop(pool_.loop(), &timeout_);
}

namespace {

// Uniform in [0, 1), per worker thread.
double uniform() {
  thread_local std::minstd_rand rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0, 1)(rng);
}

} // namespace

// The first check somewhere in the first interval, and each wait after it the interval give
// or take `jitter` of it: a thousand clusters' checks started by one configuration spread over
// the interval and stay spread, instead of a thousand connects in one loop pass each time.
void HealthChecker::start() {
  if (ev_is_active(&interval_))
    return;
  ev_timer_set(&interval_, uniform() * cfg_.interval, 0);
  ev_timer_start(pool_.loop(), &interval_);
}

double HealthChecker::next_wait() const {
  return cfg_.interval * (1 + cfg_.jitter * (2 * uniform() - 1));
}

void HealthChecker::interval_cb(struct ev_loop* loop, ev_timer* w, int) {
  auto* self = static_cast<HealthChecker*>(w->data);
  ev_timer_set(w, self->next_wait(), 0);
  ev_timer_start(loop, w);
  self->check();
}

void HealthChecker::timeout_cb(struct ev_loop*, ev_timer* w, int) {
  auto* self = static_cast<HealthChecker*>(w->data);
  self->abandon();
  self->finish(false, "no answer within " + std::to_string(self->cfg_.timeout) + " s");
}

void HealthChecker::check() {
  if (running_)
    return; // the last one is still under way: its timeout decides
  running_ = true;
  status_ = 0;
  ev_timer_set(&timeout_, cfg_.timeout, 0);
  ev_timer_start(pool_.loop(), &timeout_);
  pool_.acquire(this, false);
}

void HealthChecker::abandon() {
  if (queued)
    pool_.cancel(this);
  if (up_) {
    up_->detach();
    up_ = nullptr;
  }
}

void HealthChecker::on_upstream_ready(UpstreamStream& up) {
  up_ = &up;
  up.send_head(request_, BodyFraming::NONE, {"", pool_.tls() != nullptr, true, nullptr}, fwd_);
  up.end_request({});
}

void HealthChecker::on_upstream_head(const http::UpstreamResponseHead& head) {
  status_ = head.status;
}

void HealthChecker::on_upstream_end() {
  up_ = nullptr;
  bool ok = status_ >= cfg_.expect_min && status_ <= cfg_.expect_max;
  finish(ok, "answered " + std::to_string(status_));
}

void HealthChecker::on_upstream_error(UpstreamError e, Delivery) {
  up_ = nullptr;
  finish(false, std::string(to_string(e)));
}

void HealthChecker::on_queue_timeout() {
  finish(false, "no connection in time");
}

void HealthChecker::finish(bool ok, const std::string& why) {
  if (!running_)
    return;
  running_ = false;
  ev_timer_stop(pool_.loop(), &timeout_);
  const std::string& endpoint = pool_.endpoint().text;
  if (ok) {
    failures_ = 0;
    if (!healthy_ && ++successes_ >= cfg_.healthy) {
      healthy_ = true;
      pool_.note_health(true);
      core::log::write_about(core::log::Level::INFO, core::log::Kind::ENDPOINT_UP, endpoint,
                             "cluster %s: %s passes its health check again (%s)",
                             pool_.cluster().name.c_str(), endpoint.c_str(), why.c_str());
    }
    return;
  }
  successes_ = 0;
  if (healthy_ && ++failures_ >= cfg_.unhealthy) {
    healthy_ = false;
    pool_.note_health(false);
    core::log::write_about(
        core::log::Level::WARN, core::log::Kind::ENDPOINT_DOWN, endpoint,
        "cluster %s: %s failed %d health checks in a row (%s %s); no new requests "
        "go there unless every address is failing",
        pool_.cluster().name.c_str(), endpoint.c_str(), failures_, cfg_.path.c_str(), why.c_str());
  }
}

} // namespace portico::upstream
