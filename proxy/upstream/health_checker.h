#pragma once
// Active health checks of one endpoint address in one worker ([[cluster]] health_check): every
// interval a GET of the path goes through the address's own pool, so it speaks the cluster's
// protocol (HTTP/1.1, h2c, TLS) on the connections requests use. `unhealthy` failures in a row
// (a status outside expect, no answer within timeout, a refused connect) take the address out
// of the cluster's choice; `healthy` successes in a row bring it back. An address not checked
// yet counts as healthy, so traffic flows from the start.
#include "config/config.h"
#include "http/request_head.h"
#include "upstream/request_writer.h"
#include "upstream/upstream_stream.h"
#include "upstream/upstream_stream_listener.h"

#include <ev.h>
#include <string>

namespace portico::upstream {

class UpstreamPool;

class HealthChecker final : public UpstreamStreamListener {
public:
  HealthChecker(UpstreamPool& pool, const config::HealthCheckConfig& cfg);
  ~HealthChecker() override;
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;

  // Checks from now on (the address is known), the first within one interval.
  void start();
  bool healthy() const { return healthy_; }

  void on_upstream_ready(UpstreamStream& up) override;
  void on_upstream_head(const http::UpstreamResponseHead& head) override;
  void on_upstream_body(std::string_view) override {}
  void on_upstream_end() override;
  void on_upstream_error(UpstreamError e, Delivery delivery) override;
  void on_queue_timeout() override;

private:
  static void interval_cb(struct ev_loop* loop, ev_timer* w, int revents);
  static void timeout_cb(struct ev_loop* loop, ev_timer* w, int revents);
  double next_wait() const;
  void check();
  void finish(bool ok, const std::string& why);
  // Gives up the stream or the place in the queue of a check under way.
  void abandon();

  UpstreamPool& pool_;
  const config::HealthCheckConfig& cfg_;
  std::string authority_;
  http::RequestHead request_;
  ForwardingOptions fwd_; // nothing added: the check is the proxy's own request
  ev_timer interval_;
  ev_timer timeout_;
  UpstreamStream* up_ = nullptr;
  bool running_ = false;
  bool healthy_ = true;
  int status_ = 0;
  int successes_ = 0, failures_ = 0; // in a row
};

} // namespace portico::upstream
